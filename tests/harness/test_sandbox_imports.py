"""The arena narrows file access (Landlock) before the candidate loads, and the project folder
is not readable afterwards (a candidate must not read the hidden shapes or the judge). Whatever
the arena itself still needs from the project must therefore be imported first: the GPU hold
(harness/hold.py, a Triton kernel whose source the jit reads at import) imported after the
narrowing fails with EACCES, and every evaluation would silently fall back to the weaker sleep
slack. This runs the arena's real set-up in a spawned process and then imports what
the GPU path imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from pathlib import Path
from cockpit.harness.arena import Arena
root, work = sys.argv[1], sys.argv[2]
cfg = {"device": "cpu", "workdir": work, "exchange": work, "cache_dir": work, "n_outputs": 1,
       "sandbox": True, "exclude": [root], "memory_bytes": None}
prot = Arena(None, cfg).setup()
out = {"filesystem": prot.get("filesystem", "")}
try:
    Path(root, "cockpit", "harness", "hold.py").read_text()
    out["project_readable"] = True
except OSError:
    out["project_readable"] = False
try:
    from cockpit.harness.hold import Hold, _spin  # what Arena._setup_cuda imports on a GPU
    out["hold"] = "ok:" + Hold.__name__ + ":" + type(_spin).__name__
except Exception as exc:
    out["hold"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def test_the_gpu_hold_is_importable_after_the_sandbox_narrows_file_access(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if not out["filesystem"].startswith("landlock"):
        pytest.skip(f"no Landlock on this machine: {out['filesystem']}")
    assert out["project_readable"] is False  # the narrowing is real
    assert out["hold"].startswith("ok:Hold:"), out["hold"]


def test_the_arenas_torch_cuda_stream_cannot_be_subclassed():
    """The stream class the arena installs (cockpit.harness.arena._TrackedStream) refuses
    subclasses: one could answer the join's record_event or query with something else."""
    from cockpit.harness.arena import _TrackedStream

    with pytest.raises(TypeError, match="cannot be subclassed"):

        class Quiet(_TrackedStream):  # noqa: F841
            pass


def test_the_candidates_environment_finds_the_interpreters_own_tools_first(monkeypatch, tmp_path):
    """load_inline (a backend candidates may use) runs `ninja`, which pip puts beside the
    interpreter: the candidate's PATH starts with that folder even when the environment was not
    activated (CI runs `.venv/bin/python -m pytest`), once, before the rest of PATH in order.
    Keys and other variables are still dropped."""
    from cockpit.harness import sandbox

    here = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", f"/usr/local/bin:{here}:/usr/bin")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-candidates")
    env = sandbox.scrubbed_env(tmp_path, tmp_path, "cpu")
    assert env["PATH"].split(":") == [here, "/usr/local/bin", "/usr/bin"]
    assert "OPENAI_API_KEY" not in env and env["HOME"] == str(tmp_path)
    monkeypatch.delenv("PATH")
    assert sandbox.scrubbed_env(tmp_path, tmp_path, "cpu")["PATH"].split(":")[0] == here
