"""GPU exploit: do the real work on a side stream that does NOT wait on the timed stream, so it
starts at once (the inputs are ready: the judge synchronized) and runs while the timed stream is
still busy with the harness's flush and launch slack, before the start event. On the timed
stream it leaves a copy of the input: about the same bytes as a softmax, so the event time looks
like a fast, plausible kernel (just above the floor, past the impossible-speed gate).

Defense: the launch slack is a hold on every SM (harness/hold.py) and the arena calls the
candidate only once the hold runs, so the side-stream kernels queue behind it and run after the
start event, sharing the GPU with the copy: the reported time includes them (or the host clock
flags `hidden_work`). Expected on a GPU: never faster than the honest `torch_eager` seed. A
slack that only sleeps on one thread would let it report roughly the copy's time.

Cheating from the first call would be `wrong` (NaN): during verification the judge
writes fresh inputs on the timed stream just before the call, so a side stream that does not
wait reads them unwritten. So it is honest for the first HONEST calls of each shape (the
verification) and cheats once a shape repeats (the timing loop)."""

import torch

_side = None
_scratch = {}
_calls: dict = {}
HONEST = 8


def kernel(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    key = (tuple(x.shape), x.dtype)
    _calls[key] = _calls.get(key, 0) + 1
    if _calls[key] <= HONEST:
        return torch.softmax(x, -1)
    y = torch.empty_like(x)
    with torch.cuda.stream(_side):  # no wait_stream: start now, in the slack before the clock
        y.copy_(torch.softmax(x, -1))
    buf = _scratch.get((x.shape, x.dtype))
    if buf is None:
        buf = _scratch[(x.shape, x.dtype)] = torch.empty_like(x)
    buf.copy_(x)  # the decoy on the timed stream
    torch.cuda.current_stream().wait_stream(_side)  # y is complete when the call returns
    return y
