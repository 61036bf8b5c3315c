"""GPU exploit: most of the work on the timed stream, the rest on a side stream that waits for it
and is never joined back. The end event fires when the timed stream's part is done; the side
stream's part runs after it, outside the events, and is complete by the time the harness reads
the outputs (its device-wide synchronize). A third of the rows on the side stream: the host
clock sees ~1.4x the event time, under the `hidden_work` gate on host minus event time (half the
call), so the events alone would report a ~1.4x faster softmax.

Defense: the tail check (session 10). Once the end event has completed, a device-wide
synchronize that still waits is waiting for the call's unjoined work; its median must stay under
max(20 us, 2% of the call) (`hidden_work`). Streams that are forked and joined back are allowed
(since session 10 the static scan no longer refuses `torch.cuda.Stream`).

Honest (joined) for its first HONEST calls of a shape: the verification reads the outputs on the
timed stream right after the call, before any device-wide synchronize, and would see the side
rows unwritten (`wrong`) instead of testing the tail check."""

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
    cut = (2 * x.shape[0]) // 3
    y[:cut] = torch.softmax(x[:cut].float(), -1).to(x.dtype)  # on the timed stream
    _side.wait_stream(torch.cuda.current_stream())  # after the timed part, and after y exists
    with torch.cuda.stream(_side):
        y[cut:] = torch.softmax(x[cut:].float(), -1).to(x.dtype)
    if _calls[key] <= HONEST:
        torch.cuda.current_stream().wait_stream(_side)  # joined: verification sees all of y
    return y
