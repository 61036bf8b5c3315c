"""Exploit: ending the process during the call.

The kernel prints an "ok" line and calls `os._exit(0)`. A harness that runs the candidate as a
subprocess and treats "exit code 0 and nothing went wrong on the way" as success (or that reads
the last result line from stdout) reports a pass for a kernel that never returned anything.

Defense that must catch it: the judge knows it is waiting for a reply when the process ends ->
`rejected` / `integrity` "ended the process during the call".
"""

import os

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    print('{"status": "ok", "geomean_us": 0.01}', flush=True)
    os._exit(0)
    return torch.softmax(x, dim=-1)  # never reached
