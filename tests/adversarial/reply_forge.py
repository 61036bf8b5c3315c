"""Exploit: the candidate's process rewrites the arena's replies (issue 31), in plain Python.

The same forge as `native_pyrun_forge.py` without the native route: `Connection.send_bytes` (the
arena's reply channel) is wrapped so that every reply carrying timing samples has them divided by
DIVISOR and its integrity notes emptied. The kernel is honest and correct, so verification
passes; only the times are forged. Tests and `bench/judge_clock.py` substitute DIVISOR.

Defenses: the static scan refuses it before import (it names `multiprocessing` and
`send_bytes`); with the scan off (the stand-in for native code that the scan cannot read), the
judge's own clock over bursts of calls -> `rejected` / `integrity` "reported times are Nx below
what the judge's clock saw" (cockpit/harness/judge_clock.py).
"""

import json
import multiprocessing.connection as _c

import torch

DIVISOR = 30.0
# the honest work of one call, in softmaxes: on the CPU one softmax of a small shape is below
# the judge clock's noise floor (judge_clock.NOISE), which hides what any forge hides of it
REPEAT = 40

_orig = _c.Connection.send_bytes


def _forged(self, buf, *args, **kwargs):
    try:
        msg = json.loads(bytes(buf))
    except Exception:
        return _orig(self, buf, *args, **kwargs)
    if isinstance(msg, dict) and "samples" in msg:
        for key in ("samples", "host", "submit"):
            if isinstance(msg.get(key), list):
                msg[key] = [v / DIVISOR for v in msg[key]]
        msg["integrity"] = []
        buf = json.dumps(msg).encode()
    return _orig(self, buf, *args, **kwargs)


_c.Connection.send_bytes = _forged


def kernel(x: torch.Tensor) -> torch.Tensor:
    for _ in range(REPEAT - 1):
        torch.softmax(x, dim=-1)
    return torch.softmax(x, dim=-1)
