"""Unusual but legitimate: half of the rows on a side stream forked from the current one and
joined back before the call returns (on CUDA, for inputs of at least 1024 rows; smaller ones
and the CPU take one plain softmax). After its first large input the stream exists but sits
idle through the small ones: the arena joins only streams that still have work, so the tiny
calls must time as the plain softmax does."""

import torch

_side: dict = {}


def kernel(x):
    if not x.is_cuda or x.shape[0] < 1024:
        return torch.softmax(x, -1)
    side = _side.get(x.device)
    if side is None:
        side = _side[x.device] = torch.cuda.Stream(x.device)
    main = torch.cuda.current_stream(x.device)
    y = torch.empty_like(x)
    half = x.shape[0] // 2
    side.wait_stream(main)  # x is ready and y exists
    y[:half] = torch.softmax(x[:half], -1)
    with torch.cuda.stream(side):
        y[half:] = torch.softmax(x[half:], -1)
    main.wait_stream(side)  # joined: y is complete on the caller's stream
    return y
