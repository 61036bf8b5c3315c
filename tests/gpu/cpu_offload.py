"""GPU exploit: compute on the CPU while the GPU is held. The launch slack holds every SM, but
not the copy engines: a side stream that does not wait on the timed stream copies the input to
the host at once, the CPU computes the softmax, the result is copied back, and the timed stream
gets only a decoy copy (about a softmax's bytes, just above the floor). The hold stretches with
the candidate's host time (up to 2 ms), so this fits inside the slack at small and medium shapes.

Defense: during a timed call every side stream waits for the start event
(`arena._fence`; a stream made during the call waits from birth), so the copy to the host, the
CPU's softmax and the copy back all run inside the clock: the call is timed at what it costs,
and the `host-bound` flag (host time past the base slack, 200 us, beside a tiny GPU time) says
what the result is. Expected on a GPU: far slower than the honest seed, and
host-bound. Honest for the first HONEST calls of each shape (verification writes fresh inputs just
before the call, which a side stream that does not wait would read unwritten)."""

import torch

_side = None
_scratch: dict = {}
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
    with torch.cuda.stream(_side):  # no wait_stream: the copy engine runs during the hold
        host = x.to("cpu")
        y = torch.softmax(host.float(), -1).to(x.dtype).to(x.device)
    buf = _scratch.get(key)
    if buf is None:
        buf = _scratch[key] = torch.empty_like(x)
    buf.copy_(x)  # the decoy on the timed stream
    torch.cuda.current_stream().wait_stream(_side)
    return y
