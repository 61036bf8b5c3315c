"""A candidate judged by the loop's screen alone is labelled so wherever it is shown, and is
never "best": not in `cockpit status`, the cockpit's model, its beam rows or the event log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from session_builder import SEED, Builder, result

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.tui.describe import describe
from cockpit.tui.widgets.beam_panel import Columns, candidate_row


def _session(folder: Path) -> Path:
    b = Builder(folder)
    b.append(
        ev.SESSION_CREATED,
        {"name": folder.name, "task": "softmax", "device": "cuda", "created": b.t0},
        dt=0,
    )
    b.append(ev.BRANCH_CREATED, {"family": "triton", "model": None}, branch="b1", dt=0)
    b.candidate("c0001", "b1", "triton", SEED, "ok", 50.0, dt=1)
    b.append(ev.BEST_CHANGED, {"candidate": "c0001", "score_us": 50.0}, "b1", "c0001", dt=40)
    # faster on its screened times than the best, and screened only (its promotion never ran)
    screened = dict(result("ok", 40.0), tier="screened", promotion={"why": "screened at 0.8x"})
    b.append(ev.CANDIDATE_PROPOSED, {"parent": "c0001", "family": "triton"}, "b1", "c0002", dt=50)
    b.append(ev.EVALUATION_FINISHED, screened, "b1", "c0002", dt=60)
    b.close()
    return folder


def test_a_screened_candidate_is_labelled_and_never_best(tmp_path):
    folder = _session(tmp_path / "s")
    with SessionRecord.open_readonly(folder) as rec:
        cands = {c.id: c for c in rec.candidates()}
        finished = rec.events(kinds=[ev.EVALUATION_FINISHED])
    assert cands["c0002"].screened and not cands["c0002"].rankable
    assert cands["c0001"].rankable

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from cockpit.cli import main; sys.exit(main())",
            "status",
            str(folder),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["best"]["candidate"] == "c0001"

    row = candidate_row(cands["c0002"], False, Columns()).plain
    assert "ok·scr" in row
    text, _ = describe(finished[-1])
    assert "screened, not promoted" in text
