"""Exploit: forging the memfd exchange's references from inside the arena (a replay).

With the memfd exchange (the default) the arena writes each output into a shared
region and replies with its [offset, size]; the writer starts again from offset 0 at every request.
The candidate shares the arena's process, so at import it wraps
`cockpit.harness.wire.Region.pack`: the first output of each size is also parked past the end
of what any request writes, and every later output of that size is answered with the parked
copy's reference. The judge would read one stale result again and again, a replay the candidate never
recomputes. (Replacing a method on the class leaves `vars(wire)` untouched, so a snapshot of the
module alone does not see it; without the class in the snapshot the verdict is `wrong` at the
first timed call whose output is checked, with a less useful reason.)

Defense that must catch it: the arena's integrity snapshot guards the exchange's classes too, so
the rebinding is `integrity` ("Region.pack was replaced").
"""

import sys

import torch

_wire = sys.modules.get("cockpit.harness.wire")
if _wire is not None:
    _orig = _wire.Region.pack
    _parked: dict = {}  # output size -> the reference of its parked first copy
    _park = [1 << 30]  # past what the small shapes of a test ever write

    def _pack(self, t, prefix="t"):
        meta = _orig(self, t, prefix)
        if prefix in ("o", "co"):
            size = meta["region"][1]
            if size not in _parked:
                end, self.offset = self.offset, _park[0]
                _parked[size] = _orig(self, t, prefix)["region"]
                _park[0], self.offset = self.offset, end
            else:
                meta["region"] = list(_parked[size])
        return meta

    _wire.Region.pack = _pack


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
