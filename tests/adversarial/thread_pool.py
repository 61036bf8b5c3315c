"""Exploit: thread-pool tampering.

On the first call the kernel changes the size of torch's intra-op thread pool (to 1 on a
multi-core machine): small softmaxes stop paying for waking OpenMP workers, so this kernel times
faster, and every later measurement in the process (baselines, other candidates sharing a worker)
runs with a different pool.

Defense that must catch it: `torch.get_num_threads()` is part of the flag snapshot compared after
every call -> `rejected` / `integrity` "num_threads changed".
"""

import torch

_done = False


def kernel(x: torch.Tensor) -> torch.Tensor:
    global _done
    if not _done:
        n = torch.get_num_threads()
        torch.set_num_threads(1 if n != 1 else 2)
        _done = True
    return torch.softmax(x, dim=-1)
