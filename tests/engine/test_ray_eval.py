"""`cockpit eval --parts N --backend ray`: the parts of a sharded evaluation as Ray tasks on a real
local Ray cluster (ray_cluster.py: a head and two worker node processes of one CPU slot each),
merged into the verdict the local `--parts` path gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engine_helpers import TOYTASK, Cockpit
from ray_cluster import NO_RAY, LocalCluster, cockpit_without_ray

VECTORIZED = TOYTASK / "seeds" / "vectorized.py"
EVAL_OPTS = ("--device", "cpu", "--quick", "--json", "--parts", "2")


def shapes(d: dict) -> list[tuple[str, str, bool]]:
    return [(s["shape"], s["set"], s["ok"]) for s in d["shapes"]]


def test_eval_backend_ray_without_ray_installed_is_one_line_naming_the_install(
    cockpit: Cockpit,
) -> None:
    proc = cockpit_without_ray(
        cockpit, "eval", str(TOYTASK), str(VECTORIZED), *EVAL_OPTS, "--backend", "ray"
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [NO_RAY]


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--backend", "ray"], "--backend ray goes with --parts N"),
        (["--ray-address", "127.0.0.1:1", "--parts", "2"], "--ray-address goes with --backend ray"),
        (["--ray-cpus", "2", "--parts", "2"], "--ray-cpus goes with --backend ray"),
    ],
)
def test_ray_options_without_their_pair_are_usage_errors(
    cockpit: Cockpit, extra: list[str], line: str
) -> None:
    proc = cockpit("eval", str(TOYTASK), str(VECTORIZED), "--device", "cpu", "--quick", *extra)
    assert proc.returncode == 2 and line in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_parts_on_ray_merge_to_the_local_parts_verdict(
    nodes: LocalCluster, cockpit: Cockpit, tmp_path: Path
) -> None:
    """Two parts on two nodes: the same merged verdict as `--parts 2` on this host, for a
    candidate that passes and for one wrong only on the benchmark shape (dealt to part 2)."""
    cluster = nodes
    a, b = cluster.add(), cluster.add()
    wrong = tmp_path / "wrong_on_96_rows.py"
    wrong.write_text(
        "import torch\n\n"
        "def kernel(x):\n"
        "    y = x * 2 + 1\n"
        "    return y + 1 if x.shape[0] == 96 else y\n"
    )
    for cand, rc in ((VECTORIZED, 0), (wrong, 1)):
        local = cockpit("eval", str(TOYTASK), str(cand), *EVAL_OPTS, timeout=300)
        ray = cockpit(
            "eval",
            str(TOYTASK),
            str(cand),
            *EVAL_OPTS,
            "--backend",
            "ray",
            "--ray-address",
            cluster.address,
            timeout=300,
        )
        assert (local.returncode, ray.returncode) == (rc, rc), local.stderr + ray.stderr
        want, got = json.loads(local.stdout), json.loads(ray.stdout)
        for key in (
            "status",
            "task",
            "candidate",
            "candidate_sha256",
            "mode",
            "device",
            "comparable",
        ):
            assert got[key] == want[key], key
        assert [s["shard"] for s in got["shards"]] == ["1/2", "2/2"]
        assert shapes(got) == shapes(want)
        assert [r["kind"] for r in got["reasons"]] == [r["kind"] for r in want["reasons"]]
        assert (got["score_us"] is None) == (want["score_us"] is None)
        # one part per node: each held its node's only CPU slot
        assert sorted(n["node_id"] for n in got["nodes"]) == sorted([a.node_id, b.node_id])
        assert "nodes" not in want
    assert want["status"] == "wrong" and want["shards"][0]["status"] == "ok"


def test_parts_on_a_cluster_without_a_slot_is_a_usage_error(
    nodes: LocalCluster, cockpit: Cockpit
) -> None:
    cluster = nodes
    cluster.add()
    proc = cockpit(
        "eval",
        str(TOYTASK),
        str(VECTORIZED),
        *EVAL_OPTS,
        "--backend",
        "ray",
        "--ray-address",
        cluster.address,
        "--ray-cpus",
        "2",
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "cockpit: error: --ray-cpus 2: the Ray cluster has fewer CPUs"
    ), proc.stderr
