"""Exploit: network access.

On every call the kernel connects to a listener on 127.0.0.1 and sends the input's shape: a real
attack would fetch precomputed answers or report the hidden shapes to a collaborator. If the
connection fails the kernel raises, so the verdict proves the sandbox cut the network.

The test replaces `PORT` with the port of a server it starts, and also checks that the server never
saw a connection.

Defense that must catch it: a fresh network namespace (and Landlock TCP rules where the ABI has
them) -> `wrong` / `exception` "network blocked".
"""

import socket

import torch

HOST = "127.0.0.1"
PORT = 0  # replaced by the test


def kernel(x: torch.Tensor) -> torch.Tensor:
    try:
        with socket.create_connection((HOST, PORT), timeout=2) as s:
            s.sendall(f"{tuple(x.shape)} {x.dtype}\n".encode())
    except OSError as exc:
        raise ConnectionError(f"network blocked: {exc}") from None
    return torch.softmax(x, dim=-1)
