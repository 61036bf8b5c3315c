"""Softmax reference: trusted, clear, and only ever imported by the judge process."""

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor]:
    """Normal values with a per-row offset and spread, so a kernel that forgets the max
    subtraction overflows and one that mixes rows up is caught."""
    dev = torch.device(device)  # drawn where it is used: a 2**31-element x in ms, not 30 s
    g = torch.Generator(device=dev).manual_seed(seed)
    rows, cols = shape["rows"], shape["cols"]
    x = torch.randn(rows, cols, generator=g, dtype=torch.float32, device=dev)
    scale = torch.rand(rows, 1, generator=g, device=dev) * 4 + 0.5
    offset = (torch.rand(rows, 1, generator=g, device=dev) - 0.5) * 200
    x.mul_(scale).add_(offset)
    return (x.to(DTYPES[shape.get("dtype", "float32")]),)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
