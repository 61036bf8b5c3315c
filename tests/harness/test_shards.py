"""`cockpit eval --shard K/N` and `cockpit merge`: one evaluation in parts, each part a real
evaluation in its own spawned arena, merged into the verdict an unsharded run gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.harness import scoring
from cockpit.harness.task import load_task

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "kernels/softmax/seeds/torch_eager.py"


def cockpit(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cockpit.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
        cwd=cwd,
    )


def eval_json(candidate: Path, out: Path, *extra: str) -> dict:
    r = cockpit("eval", "softmax", str(candidate), "--device", "cpu", "--quick", "--json", *extra)
    assert r.returncode in (0, 1), r.stderr
    out.write_text(r.stdout)
    return json.loads(r.stdout)


def keys(d: dict, public: bool = False) -> list[tuple[str, str]]:
    return [(s["shape"], s["set"]) for s in d["shapes"] if public or s["set"] != "public"]


def wrong_on(params: dict, tmp_path: Path) -> tuple[dict, dict, dict]:
    """A softmax 5% off at one (rows, cols), run as parts 1/2 and 2/2 and merged (the merge must
    exit 1): (part 1, part 2, merged)."""
    bad = tmp_path / "one_shape.py"
    bad.write_text(
        "import torch\n\n"
        "def kernel(x):\n"
        "    y = torch.softmax(x.float(), -1)\n"
        f"    if tuple(x.shape) == ({params['rows']}, {params['cols']}):\n"
        "        y = y * 1.05\n"
        "    return y.to(x.dtype)\n"
    )
    p1 = eval_json(bad, tmp_path / "p1.json", "--shard", "1/2")
    p2 = eval_json(bad, tmp_path / "p2.json", "--shard", "2/2")
    r = cockpit("merge", str(tmp_path / "p1.json"), str(tmp_path / "p2.json"), "--json")
    assert r.returncode == 1, r.stderr
    return p1, p2, json.loads(r.stdout)


@pytest.fixture(scope="module")
def parts(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("shards")
    return {
        "whole": eval_json(SEED, tmp / "whole.json"),
        "p1": eval_json(SEED, tmp / "p1.json", "--shard", "1/2"),
        "p2": eval_json(SEED, tmp / "p2.json", "--shard", "2/2"),
        "dir": tmp,
    }


def test_parts_split_the_hidden_and_benchmark_shapes_and_the_first_verifies_the_public_ones(parts):
    whole, p1, p2 = parts["whole"], parts["p1"], parts["p2"]
    assert p1["shard"] == "1/2" and p2["shard"] == "2/2" and whole["shard"] is None
    assert p1["status"] == p2["status"] == "ok"
    a, b = set(keys(p1)), set(keys(p2))
    assert a and b and not a & b
    assert a | b == set(keys(whole))
    public = [k for k in keys(whole, public=True) if k[1] == "public"]
    assert public
    assert [k for k in keys(p1, public=True) if k[1] == "public"] == public
    assert not [k for k in keys(p2, public=True) if k[1] == "public"]
    # hidden and benchmark shapes are dealt in turn, so both parts get hidden and benchmark ones
    for p in (p1, p2):
        assert {s for _, s in keys(p)} == {"hidden", "benchmark"}
    # one profile per evaluation: the first part's
    assert p1["profile"].get("launches", 0) >= 1 and "launches" not in p2["profile"]
    assert p1["candidate_sha256"] == p2["candidate_sha256"] == whole["candidate_sha256"]


def test_merge_gives_the_shapes_and_scores_of_one_evaluation(parts):
    d = parts["dir"]
    r = cockpit(
        "merge", str(d / "p2.json"), str(d / "p1.json"), "--json", "--out", str(d / "m.json")
    )
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert json.loads((d / "m.json").read_text()) == m
    assert m["status"] == "ok" and m["shard"] is None
    assert [p["shard"] for p in m["shards"]] == ["1/2", "2/2"]
    # the same shapes, in the judge's order (public, hidden, benchmark)
    assert sorted(keys(m, public=True)) == sorted(keys(parts["whole"], public=True))
    sets = [s for _, s in keys(m, public=True)]
    assert sets == sorted(sets, key=["public", "hidden", "benchmark"].index)
    # geomeans recomputed from the merged per-shape medians and floors, as the judge scores
    bench = [s for s in m["shapes"] if s["set"] == "benchmark"]
    hidden = [s for s in m["shapes"] if s["set"] == "hidden"]

    def score(rows):
        return scoring.score(
            [s["timing"]["median_us"] for s in rows],
            [s["floor_us"] for s in rows],
            [s["weight"] for s in rows],
        )

    assert m["geomean_us"] == pytest.approx(score(bench))
    assert m["hidden_geomean_us"] == pytest.approx(score(hidden))
    assert m["score_us"] == pytest.approx(score(bench + hidden))
    assert m["geomean_us"] not in (parts["p1"]["geomean_us"], parts["p2"]["geomean_us"])
    assert m["profile"] == parts["p1"]["profile"]
    assert m["wall_s"] == max(parts["p1"]["wall_s"], parts["p2"]["wall_s"])

    table = cockpit("merge", str(d / "p1.json"), str(d / "p2.json"))
    assert table.returncode == 0 and "merged from 2 parts" in table.stdout


def test_a_candidate_wrong_on_one_shape_of_one_part_fails_the_merge(parts, tmp_path):
    """Part 1 passes on its own; the merge must not."""
    task = load_task("softmax")
    dealt = task.shape_set("cpu", "hidden") + task.shape_set("cpu", "benchmark")
    mine = [s for i, s in enumerate(dealt) if i % 2 == 1 and s.set == "hidden"]
    others = {(s.params["rows"], s.params["cols"]) for i, s in enumerate(dealt) if i % 2 == 0}
    others |= {(s.params["rows"], s.params["cols"]) for s in task.shape_set("cpu", "public")}
    target = next(s for s in mine if (s.params["rows"], s.params["cols"]) not in others)
    p1, p2, m = wrong_on(target.params, tmp_path)
    assert p1["status"] == "ok" and p2["status"] == "wrong"
    assert m["status"] == "wrong" and m["geomean_us"] is None and m["speedups"] == {}
    assert m["reasons"] == p2["reasons"] and m["reasons"][0]["kind"] == "numerical"


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_merge_refuses_anything_but_all_parts_of_one_evaluation(parts, tmp_path):
    d = parts["dir"]
    p1, whole = str(d / "p1.json"), str(d / "whole.json")
    _one_line_error(cockpit("merge", p1, p1), "given twice")
    _one_line_error(cockpit("merge", p1), "2/2 missing")
    _one_line_error(cockpit("merge", p1, whole), "not a part of a sharded evaluation")
    other = dict(parts["p2"], candidate_sha256="0" * 64)
    (tmp_path / "other.json").write_text(json.dumps(other))
    _one_line_error(cockpit("merge", p1, str(tmp_path / "other.json")), "candidate_sha256")
    three = dict(parts["p2"], shard="2/3")
    (tmp_path / "three.json").write_text(json.dumps(three))
    _one_line_error(cockpit("merge", p1, str(tmp_path / "three.json")), "different split")
    (tmp_path / "junk.json").write_text("{not json")
    _one_line_error(cockpit("merge", p1, str(tmp_path / "junk.json")), "not a JSON")
    _one_line_error(cockpit("merge", p1, str(tmp_path / "absent.json")), "no such file")


@pytest.mark.parametrize("bad", ["3/2", "0/2", "x", "1/2/3"])
def test_a_bad_shard_is_a_usage_error(bad):
    r = cockpit("eval", "softmax", str(SEED), "--device", "cpu", "--quick", "--shard", bad)
    _one_line_error(r, "--shard")


def test_parts_runs_every_shard_side_by_side_and_merges_them(parts):
    r = cockpit(
        "eval", "softmax", str(SEED), "--device", "cpu", "--quick", "--json", "--parts", "2"
    )
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["status"] == "ok" and [p["shard"] for p in m["shards"]] == ["1/2", "2/2"]
    assert sorted(keys(m, public=True)) == sorted(keys(parts["whole"], public=True))
    assert m["profile"].get("launches", 0) >= 1


def test_parts_of_a_candidate_wrong_on_one_shape_exit_1(tmp_path):
    bad = tmp_path / "wrong_hidden.py"
    bad.write_text(
        "import torch\n\n"
        "def kernel(x):\n"
        "    y = torch.softmax(x.float(), -1)\n"
        "    if x.shape[0] * x.shape[1] == 17 * 333:\n"
        "        y = y * 1.05\n"
        "    return y.to(x.dtype)\n"
    )
    r = cockpit("eval", "softmax", str(bad), "--device", "cpu", "--quick", "--json", "--parts", "2")
    assert r.returncode == 1, r.stderr
    m = json.loads(r.stdout)
    assert m["status"] == "wrong" and m["reasons"][0]["kind"] == "numerical"


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--parts", "0"], "positive number"),
        (["--parts", "2", "--shard", "1/2"], "exclude each other"),
    ],
)
def test_bad_parts_are_usage_errors(extra, words):
    r = cockpit("eval", "softmax", str(SEED), "--device", "cpu", "--quick", *extra)
    _one_line_error(r, words)


def test_a_candidate_wrong_on_a_public_shape_fails_the_merge_though_part_2_never_sees_it(
    parts, tmp_path
):
    """The public shapes are verified in part 1 alone: part 2 passes, the merge must not."""
    task = load_task("softmax")
    public = task.shape_set("cpu", "public")[0]
    dealt = task.shape_set("cpu", "hidden") + task.shape_set("cpu", "benchmark")
    p = public.params
    assert all((s.params["rows"], s.params["cols"]) != (p["rows"], p["cols"]) for s in dealt)
    p1, p2, m = wrong_on(p, tmp_path)
    assert p1["status"] == "wrong" and p2["status"] == "ok"
    assert m["status"] == "wrong"
    assert [s["ok"] for s in m["shapes"] if s["set"] == "public"][0] is False
