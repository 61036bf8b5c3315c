"""Unusual but correct: a softmax that floods its stdout and stderr.

At import it writes FLOOD_MB MiB to stdout (and a little to stderr), and every call writes
another 256 KiB. Nothing the candidate prints is parsed, and the judge keeps only the first and
last 64 KiB of it (counting the rest), so the verdict is `ok` with an "output truncated: N bytes"
flag. tests/harness/test_output_flood.py raises FLOOD_MB to show the judge's memory stays
bounded whatever the candidate writes.
"""

import sys

import torch

FLOOD_MB = 8
_BLOCK = b"flood " * 174762 + b"\n"  # ~1 MiB a line

sys.stdout.buffer.write(b"FLOOD-BEGINS\n")
for _ in range(FLOOD_MB):
    sys.stdout.buffer.write(_BLOCK)
sys.stdout.flush()
sys.stderr.write("flood on stderr too\n" * 1000)
sys.stderr.flush()


def kernel(x: torch.Tensor) -> torch.Tensor:
    sys.stdout.write(("call " * 13107 + "\n") * 4)
    sys.stdout.flush()
    return torch.softmax(x, dim=-1)
