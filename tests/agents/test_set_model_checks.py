"""`set-model` (`cockpit send … set-model`, the cockpit's `m` key) with a model string no
provider serves is refused by a running LLM engine, in its acknowledgement, instead of being
applied and failing every later call. A real detached `cockpit run` against the fake provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agents_helpers import reply_with
from fake_provider import Reply

ROOT = Path(__file__).resolve().parents[2]
TOYTASK = ROOT / "tests" / "engine" / "toytask"
COCKPIT = (sys.executable, "-m", "cockpit.cli")
GOOD = "import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x):\n    return x * 2 + 1\n"


def _cockpit(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COCKPIT_SESSIONS_DIR": str(tmp_path / "s"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    return subprocess.run([*COCKPIT, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_running_llm_engine_refuses_set_model_with_an_unknown_model(
    provider, keys, write_profile, tmp_path
):
    # slow replies keep the engine at work while the commands arrive
    provider.default = Reply(text=reply_with(GOOD), delay_s=0.5)
    profile = write_profile(
        name="slow", proposer="llm", model="openai/coder", api_base=provider.openai_base,
        retries=0, timeout_s=20, stream=False, max_unusable=1000, max_calls_per_eval=10,
    )  # fmt: skip
    run = _cockpit(tmp_path, "run", str(TOYTASK), "--session", "m", "--agent", str(profile),
                   "--budget", "200", "--beam", "1", "--device", "cpu", "--mode", "quick",
                   "--detach")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    try:
        for model, why in (("gtp-4o", "'gtp-4o' names no provider"),
                           ("nosuch/coder", "'nosuch/coder' names no provider")):  # fmt: skip
            r = _cockpit(tmp_path, "send", "m", "set-model", model, "--wait")
            assert r.returncode == 1, r.stdout + r.stderr
            assert r.stdout.startswith("refused: set-model: ") and why in r.stdout, r.stdout
        # no model name at all: `cockpit send` refuses it itself, nothing reaches the engine
        r = _cockpit(tmp_path, "send", "m", "set-model", "bad model", "--wait")
        assert r.returncode == 2 and "no spaces" in r.stderr, r.stdout + r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        ok = _cockpit(tmp_path, "send", "m", "set-model", "openai/other-coder", "--wait")
        assert ok.returncode == 0 and ok.stdout.startswith("ok: model openai/other-coder"), ok.stdout
        st = json.loads(_cockpit(tmp_path, "status", "m", "--json").stdout)
        assert [b["model"] for b in st["branches"]] == ["openai/other-coder"]
    finally:
        stop = _cockpit(tmp_path, "stop", "m", "--wait", "--timeout", "90")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    models = {r.body.get("model") for r in provider.received}
    assert models <= {"coder", "other-coder"}, models  # no call ever went out with a bad name
