"""The command line as a user meets it: real processes, real exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "kernels/softmax/seeds/torch_eager.py"


def cockpit(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cockpit.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def test_tasks_lists_every_shipped_task():
    r = cockpit("tasks", "--json")
    assert r.returncode == 0, r.stderr
    names = {t["name"] for t in json.loads(r.stdout)}
    assert {"softmax"} <= names


def test_eval_of_a_passing_seed_prints_one_json_object_and_exits_0():
    r = cockpit("eval", "softmax", str(SEED), "--device", "cpu", "--quick", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["status"] == "ok"
    assert d["reasons"] == []
    assert d["geomean_us"] > 0
    hidden = [s for s in d["shapes"] if s["hidden"]]
    assert hidden and all(s["ok"] and s["timing"]["median_us"] > 0 for s in hidden)
    # host time inside the call (on the CPU: the whole call) is reported per shape
    assert all(s["timing"]["submit_median_us"] > 0 for s in hidden)
    # no launch slack on the CPU, so no call can outrun one
    assert all(s["timing"]["late_pct"] is None for s in hidden)
    for s in d["shapes"]:
        assert {"shape", "hidden", "ok", "floor_us"} <= set(s)
    assert d["protections"]["network"] in ("netns", "userns+netns")
    assert "profile" in d and d["profile"]["launches"] >= 1


def test_eval_of_a_wrong_candidate_exits_1_with_the_error_size(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import torch\n\ndef kernel(x):\n    return torch.softmax(x.float() * 1.01, -1).to(x.dtype)\n"
    )
    r = cockpit("eval", "softmax", str(bad), "--device", "cpu", "--quick", "--json")
    assert r.returncode == 1
    d = json.loads(r.stdout)
    assert d["status"] == "wrong"
    assert d["reasons"][0]["kind"] == "numerical"
    assert "tolerance" in d["reasons"][0]["message"]


def test_eval_of_a_missing_candidate_is_a_one_line_usage_error():
    r = cockpit("eval", "softmax", "does/not/exist.py")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no such candidate file" in r.stderr


def test_eval_of_a_directory_says_it_is_a_directory(tmp_path):
    r = cockpit("eval", "softmax", str(tmp_path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (
        f"cockpit: error: {tmp_path}: is a directory; a candidate is one Python file defining "
        "kernel()\n"
    )


def test_eval_of_an_unknown_task_is_a_one_line_usage_error():
    r = cockpit("eval", "no-such-task", str(SEED))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unknown task" in r.stderr


def test_a_malformed_task_folder_is_named_with_its_field(tmp_path):
    (tmp_path / "task.toml").write_text('name = "broken"\ninputs = ["x"]\n')
    (tmp_path / "reference.py").write_text("")
    r = cockpit("eval", str(tmp_path), str(SEED))
    assert r.returncode == 2
    assert "task.toml" in r.stderr and "outputs" in r.stderr and r.stderr.count("\n") == 1


def test_eval_on_cuda_without_a_gpu_is_a_usage_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    r = cockpit("eval", "softmax", str(SEED), "--device", "cuda")
    assert r.returncode == 2 and "no CUDA device" in r.stderr


def test_unknown_subcommand_is_one_line():
    r = cockpit("frobnicate")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_baseline_is_stored_and_eval_reports_speedup_against_it(tmp_path):
    env = {"COCKPIT_DATA_DIR": str(tmp_path)}
    r = cockpit(
        "baseline",
        "softmax",
        "--device",
        "cpu",
        "--quick",
        "--variants",
        "reference",
        "--json",
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["reference"]["status"] == "ok"
    stored = list((tmp_path / "baselines" / "softmax").glob("*.json"))
    assert len(stored) == 1 and "reference" in json.loads(stored[0].read_text())
    r = cockpit("eval", "softmax", str(SEED), "--device", "cpu", "--quick", "--json", env=env)
    assert r.returncode == 0
    assert json.loads(r.stdout)["speedups"]["reference"] > 0


def test_piped_results_are_not_squeezed_into_80_columns(monkeypatch):
    """Piped or redirected, rich assumes 80 columns and squeezes tables until cells vanish (a
    merged QR result lost its ok column's marks and printed "medi…"): results get 200 columns
    there."""
    from rich.table import Table

    from cockpit.cli.common import out_console

    monkeypatch.delenv("COLUMNS", raising=False)
    con = out_console()
    assert not con.is_terminal and con.width == 200
    table = Table()
    for col in ("shape", "set", "ok", "median", "±sem", "n", "floor", "%roof", "err/tol"):
        table.add_column(col)
    table.add_row("640×512×2 clustered f32", "benchmark", "✓", "192 ms", "2.1%", "49", "316 µs",
                  "0.2", "0.01")  # fmt: skip
    with con.capture() as cap:
        con.print(table)
    assert "median" in cap.get() and "✓" in cap.get() and "…" not in cap.get()
    monkeypatch.setenv("COLUMNS", "80")  # exported by some shells: still not squeezed
    assert out_console().width == 200
