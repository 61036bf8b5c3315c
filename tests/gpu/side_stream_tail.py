"""GPU exploit: most of the work on the timed stream, the rest on a side stream that waits for it
and is never joined back. Without a defense the end event fires when the timed stream's part is
done, the side stream's part runs after it, outside the events, and is complete by the time the
harness reads the outputs (its device-wide synchronize). A sixth of the rows on the side stream:
the host clock sees ~1.2x the event time, under the `hidden_work` gate on host minus event time
(half the call), so the events alone would report a ~1.2x faster softmax.

Defense (the static scan allows torch.cuda.Stream, so the arena must handle it): the arena's
torch.cuda.Stream remembers every stream the candidate makes, and after every call the timed
stream waits for all of them before the end event (`arena._joined`). Expected on a GPU: ok, and
no faster than the honest `torch_eager` seed (its side rows are timed).

Honest (joined) for its first HONEST calls of a shape, as a real cheat would be: verification
reads the outputs right after the call, and an unjoined side part could still be running."""

import torch

_side = None
_calls: dict = {}
HONEST = 8


def kernel(x):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    key = (tuple(x.shape), x.dtype)
    _calls[key] = _calls.get(key, 0) + 1
    y = torch.empty_like(x)
    cut = (5 * x.shape[0]) // 6
    y[:cut] = torch.softmax(x[:cut], -1)  # on the timed stream
    _side.wait_stream(torch.cuda.current_stream())  # after the timed part, and after y exists
    with torch.cuda.stream(_side):
        y[cut:] = torch.softmax(x[cut:], -1)
    if _calls[key] <= HONEST:
        torch.cuda.current_stream().wait_stream(_side)  # joined: verification sees all of y
    return y
