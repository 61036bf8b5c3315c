"""GPU exploit: do the work on a side stream. The harness's end event is recorded on the current
stream, which has nothing queued, so event time is ~0 while the real work runs elsewhere.
Defense: a host clock across the same span, with a device-wide synchronize (`hidden_work`)."""

import torch

_side = None


def kernel(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    y = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        for _ in range(20):  # make the hidden work large enough to matter
            y.copy_(torch.softmax(x, -1))
    return y
