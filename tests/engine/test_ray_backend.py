"""`cockpit run --backend ray`: evaluations on a real local Ray cluster on this machine (a head
with no CPU slot, and worker node processes of one CPU slot each that every test adds and
removes), started here and stopped afterwards, leaving no process behind.

They show: a run's evaluations land on both nodes; a node killed mid-evaluation loses nothing
(the evaluation is retried on the other node and the run finishes); the same session resumes on
the local backend; an evaluation whose node is lost twice is a `crash` saying so. Without Ray,
`--backend ray` is a one-line usage error.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from engine_helpers import RUN_OPTS, TOYTASK, Cockpit, events, wait_for
from ray_cluster import NO_RAY, LocalCluster, cockpit_without_ray

from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.tui.widgets.gpu_panel import node_lines


# --- without a cluster ----------------------------------------------------------------------------
def test_backend_ray_without_ray_installed_is_one_line_naming_the_install(
    cockpit: Cockpit,
) -> None:
    proc = cockpit_without_ray(cockpit, "run", str(TOYTASK), "--backend", "ray", *RUN_OPTS)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [NO_RAY]
    assert not (cockpit.sessions.exists() and any(cockpit.sessions.iterdir()))  # no session made


def test_a_ray_address_nobody_answers_is_a_usage_error(cockpit: Cockpit) -> None:
    pytest.importorskip("ray")
    proc = cockpit(
        "run", str(TOYTASK), "--backend", "ray", "--ray-address", "127.0.0.1:1", *RUN_OPTS
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("cockpit: error: no Ray cluster answers at 127.0.0.1:1"), (
        proc.stderr
    )
    assert len(proc.stderr.strip().splitlines()) == 1
    for flag, value in (("--ray-address", "127.0.0.1:1"), ("--ray-cpus", "2")):
        proc = cockpit("run", str(TOYTASK), flag, value, *RUN_OPTS)
        assert (proc.returncode, proc.stderr.strip()) == (
            2,
            f"cockpit: error: {flag} goes with --backend ray",
        )


# --- a local cluster (ray_cluster.py) ------------------------------------------------------------
def node_of(e) -> str:
    return (e.payload.get("node") or {}).get("node_id")


def sampled_nodes(folder: Path) -> set[str]:
    """The nodes with telemetry in the session's record."""
    with SessionRecord.open_readonly(folder) as rec:
        return {n for (n,) in rec.execute("SELECT DISTINCT node FROM telemetry") if n}


def test_a_run_spreads_over_both_nodes_survives_one_killed_and_resumes_locally(
    nodes: LocalCluster, cockpit: Cockpit
) -> None:
    cluster = nodes
    budget = 9
    a, b = cluster.add(), cluster.add()
    ids = {n.node_id: name for n, name in ((a, "a"), (b, "b"))}
    cockpit.start(
        "spread",
        "--backend",
        "ray",
        "--ray-address",
        cluster.address,
        "--budget",
        str(budget),
        "--beam",
        "2",
        "--warm",
        "off",  # an arena runs only while its evaluation does
    )
    folder = cockpit.folder("spread")

    def on_both() -> bool:
        return {node_of(e) for e in events(folder, ev.EVALUATION_FINISHED)} >= set(ids)

    wait_for(on_both, 120, "evaluations finished on both nodes", interval=0.2)
    wait_for(
        lambda: {n.split()[-1] for n in sampled_nodes(folder)} >= {x[:8] for x in ids},
        60,
        "telemetry from both nodes",
        interval=0.2,
    )
    victim = wait_for(
        lambda: cluster.arenas(b), 60, "an evaluation in flight on node b", interval=0.05
    )
    assert victim
    cluster.kill(b)

    def retried() -> list:  # (or a crash: the retry did not happen)
        return [
            e
            for e in events(folder, ev.EVALUATION_FINISHED)
            if e.payload.get("retried_after") or e.payload["status"] == "crash"
        ]

    again = wait_for(retried, 120, "the lost evaluation's verdict", interval=0.2)
    assert len(again) == 1
    lost = again[0].payload
    assert lost["status"] == "ok" and lost["retried_after"], lost
    assert node_of(again[0]) == a.node_id  # retried on the node left
    assert lost["retried_after"][0].startswith(f"node {b.node_id[:8]}")
    stop = cockpit("stop", "spread", "--wait", "--timeout", "120", check=True)
    assert stop.returncode == 0
    st = cockpit.wait_finished("spread")
    assert st["state"] == "stopped" and st["evaluations"] < budget, st
    before = {e.candidate: e.payload for e in events(folder, ev.EVALUATION_FINISHED)}
    judged = {c: p for c, p in before.items() if p["status"] != "duplicate"}  # never sent out
    assert {p["status"] for p in judged.values()} == {"ok"}, judged
    assert {node_of(e) for e in events(folder, ev.EVALUATION_FINISHED)} - {None} == set(ids)
    # the evaluation in flight on the killed node was recorded once, from the node left
    started = [e.candidate for e in events(folder, ev.EVALUATION_STARTED)]
    assert sorted(started) == sorted(judged), (started, judged)

    # each node sampled itself, named by host and node id; these CPU nodes report no GPU, which
    # the cockpit's GPU panel says in one line per node
    with SessionRecord.open_readonly(folder) as rec:
        samples = tuple(rec.telemetry())
    on_nodes = [s for s in samples if s.node is not None]
    assert on_nodes and all(s.gpu is None and s.cpu_pct is not None for s in on_nodes)
    host = socket.gethostname()
    lines = node_lines(samples)
    assert [line.split(":")[0] for line in lines] == sorted(
        f"{host} {n.node_id[:8]}" for n in (a, b)
    )
    assert all(": no GPU · cpu " in line for line in lines), lines
    said = [e.payload for e in events(folder, ev.NOTE) if "telemetry: node" in e.payload["text"]]
    assert sorted(p["text"] for p in said) == [
        f"telemetry: node {x.split(':')[0]}: no GPU" for x in lines
    ]

    # the same session, resumed without Ray
    proc = cockpit("resume", "spread", "--backend", "local", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = cockpit.status("spread")
    assert st["state"] == "done" and len(judged) < st["evaluations"] <= budget, st
    after = {e.candidate: e.payload for e in events(folder, ev.EVALUATION_FINISHED)}
    assert {c: after[c] for c in before} == before  # nothing recorded was lost or redone
    local = [p for c, p in after.items() if c not in before and p["status"] != "duplicate"]
    assert local and all("node" not in p and p["status"] == "ok" for p in local), local
    # the same isolation on a Ray node as on this host
    judged = [p for p in after.values() if p["status"] != "duplicate"]
    assert {p["protections"]["filesystem"] for p in judged} == {
        local[0]["protections"]["filesystem"]
    }


def test_an_evaluation_lost_on_two_nodes_is_a_crash_that_says_so(nodes: LocalCluster) -> None:
    from cockpit.engine.ray_backend import BackendUnavailable, RayPool

    cluster = nodes
    survivor, extra = cluster.add(), cluster.add()
    pool = RayPool("cpu", warm=False, address=cluster.address)
    try:
        assert pool.size == 2
        where = {s["node_id"]: s["slot"] for s in pool.nodes()}
        assert set(where) == {survivor.node_id, extra.node_id}
        source = (TOYTASK / "seeds" / "vectorized.py").read_text()
        fut = pool.submit(where[extra.node_id], str(TOYTASK), "c0001.py", source, "quick")
        assert pool.free_slot() == where[survivor.node_id]
        wait_for(lambda: cluster.arenas(extra), 60, "the evaluation on the new node", 0.05)
        cluster.kill(extra)
        wait_for(lambda: cluster.arenas(survivor), 60, "its retry on the other node", 0.05)
        cluster.kill(survivor)
        result = fut.result(timeout=120)
    finally:
        pool.shutdown()
    assert result["status"] == "crash"
    (reason,) = result["reasons"]
    host = socket.gethostname()
    assert reason["message"] == (
        f"the Ray worker evaluating it was lost on node {extra.node_id[:8]} ({host}) "
        f"(ActorDiedError) and again on node {survivor.node_id[:8]} ({host}) (ActorDiedError), "
        "after one retry"
    ), reason
    assert pool.size == 0
    with pytest.raises(BackendUnavailable, match="every Ray node of this run was lost"):
        pool.free_slot()


def test_each_gpu_of_the_cluster_is_one_slot_with_its_own_device(nodes: LocalCluster) -> None:
    """GPUs declared to Ray (this machine has none): one actor per GPU, each with its own
    `CUDA_VISIBLE_DEVICES`, so no two evaluations share a GPU; the verdict says which ran it."""
    from cockpit.engine.ray_backend import RayPool

    cluster = nodes
    gpus = cluster.add(num_cpus=2, num_gpus=2)
    pool = RayPool("cuda", warm=False, address=cluster.address)
    try:
        assert pool.size == 2
        assert {s["node_id"] for s in pool.nodes()} == {gpus.node_id}
        assert sorted(s["gpu"] for s in pool.nodes()) == ["0", "1"]
        assert sorted(pool.devices) == [f"{gpus.node_ip_address}:{g}" for g in ("0", "1")]
        source = (TOYTASK / "seeds" / "vectorized.py").read_text()
        fut = pool.submit(1, str(TOYTASK), "c0001.py", source, "quick")
        assert pool.free_slot() == 0  # slot 1 is busy until its verdict is back
        result = fut.result(timeout=120)
        assert pool.free_slot() == 0
    finally:
        pool.shutdown()
    # judged for the node's GPU 1, which does not exist here: the candidate's process says so
    assert result["node"]["gpu"] == pool.nodes()[1]["gpu"]
    assert (result["status"], result["device"]) == ("crash", "cuda"), result
    assert "CUDA" in result["reasons"][0]["message"], result


def test_the_task_folder_travels_as_files_and_lands_in_one_folder_per_content(
    tmp_path: Path,
) -> None:
    from cockpit.engine.ray_backend import cluster_slots, materialize, task_files

    files = task_files(TOYTASK)
    assert {"task.toml", "reference.py", "seeds/vectorized.py"} <= set(files)
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    one = materialize("toytask", files, base=tmp_path)
    assert one.name == "toytask"
    assert (one / "task.toml").read_bytes() == (TOYTASK / "task.toml").read_bytes()
    assert materialize("toytask", files, base=tmp_path) == one  # the same content, same folder
    edited = dict(files, **{"task.toml": files["task.toml"] + b"\n# edited\n"})
    other = materialize("toytask", edited, base=tmp_path)
    assert other != one and (other / "task.toml").read_bytes().endswith(b"# edited\n")
    with pytest.raises(ValueError, match="outside its folder"):
        materialize("toytask", {"../escape.py": b""}, base=tmp_path)
    assert not (tmp_path / "escape.py").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".part-")]
    assert cluster_slots({"GPU": 8.0, "CPU": 64.0}, "cuda", 1) == 8
    assert cluster_slots({"CPU": 5.0}, "cpu", 2) == 2
    assert cluster_slots({"CPU": 4.0}, "cuda", 1) == 0


def test_the_cockpit_log_names_the_node_of_a_verdict_from_ray() -> None:
    from cockpit.store.models import Event
    from cockpit.tui.describe import describe

    def line(payload: dict) -> str:
        e = Event(1, 0.0, ev.EVALUATION_FINISHED, "b1", "c0004", payload)
        return describe(e)[0]

    ok = {"status": "ok", "score_us": 3.0}
    assert line(ok) == "c0004 b1 ok 3.00µs"
    assert line(dict(ok, node={"host": "gpu-7", "gpu": "2"})) == "c0004 b1 ok 3.00µs on gpu-7 GPU 2"
    crash = {"status": "crash", "reasons": [{"kind": "crash", "message": "lost"}]}
    assert (
        line(dict(crash, node={"host": "cpu-1", "gpu": None})) == "✗ c0004 b1 crash on cpu-1: lost"
    )


def test_a_run_that_loses_every_node_ends_crashed_saying_so(
    nodes: LocalCluster, cockpit: Cockpit
) -> None:
    cluster = nodes
    only = cluster.add()
    cockpit.start(
        "alone",
        "--backend",
        "ray",
        "--ray-address",
        cluster.address,
        "--budget",
        "20",
        "--beam",
        "1",
        "--warm",
        "off",
    )
    folder = cockpit.folder("alone")
    wait_for(lambda: events(folder, ev.EVALUATION_FINISHED), 120, "a first verdict", 0.2)
    wait_for(lambda: cluster.arenas(only), 60, "an evaluation in flight", 0.05)
    cluster.kill(only)
    st = cockpit.wait_finished("alone", timeout=120)
    assert st["state"] == "crashed", st
    (error,) = events(folder, ev.ERROR)
    assert error.payload["message"] == (
        "BackendUnavailable: every Ray node of this run was lost: resume it when the cluster is "
        "back, or with --backend local"
    )
    last = events(folder, ev.EVALUATION_FINISHED)[-1].payload
    assert last["status"] == "crash" and "with no live worker left to retry on" in str(last)
    assert "every Ray node of this run was lost" in (folder / "engine.log").read_text()
