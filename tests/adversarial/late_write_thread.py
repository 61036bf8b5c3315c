"""Exploit: late writes from a background thread.

The kernel returns an empty output at once and a background thread fills it in a few
milliseconds later. A harness that stops its clock when the call returns, and compares the output
only after some other work (computing the reference, say), sees a correct result and a near-zero
time: the work happened outside the timed span.

Defense that must catch it: the thread census after every call (a thread started by the
candidate and still alive) -> `rejected` / `integrity` "background thread"; outputs are also
copied out immediately after the call, before the thread writes.
"""

import threading
import time

import torch


def kernel(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)

    def fill() -> None:
        time.sleep(0.05)
        y.copy_(torch.softmax(x, dim=-1))

    threading.Thread(target=fill, daemon=True).start()
    return y
