"""Reference for the engine's toy task: y = 2 * x + 1."""

import torch


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape["rows"], shape["cols"], generator=g, dtype=torch.float32)
    return (x.to(device),)


def reference(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1
