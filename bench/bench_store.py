"""Session-record benchmark: a synthetic session of 10,000 candidates and 100,000 events.

Measures what the loop and the views pay for the record:
  - durable appends (one transaction and one fsync each, as the engine writes) and grouped ones,
  - the git commit of a candidate,
  - what `cockpit status` needs: open read-only, meta, counts, branches, the candidate list,
    in-process and as a fresh `python` process,
  - replay: loading the events, re-applying all of them, seeking back, rebuild().

Usage: .venv/bin/python bench/bench_store.py [--candidates 10000] [--events 100000]
Prints a table and writes bench/results/store.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cockpit.store import ReplayReader, SessionRecord, create_session
from cockpit.store import events as ev
from cockpit.store.gitrepo import CandidateRepo, format_commit_message

RESULTS = Path(__file__).with_name("results") / "store.json"
FAMILIES = ("online", "two-pass", "looped", "tiled", "warp-per-row")
DURABLE_SAMPLE = 2_000  # events appended one transaction each before switching to groups
GIT_SAMPLE = 500  # candidates committed to git (3 ms each; all 10,000 would add half a minute)


def fake_result(rng: random.Random, n: int) -> dict:
    """A result record shaped like the harness's (12 timed shapes), about 3 kB of JSON."""
    ok = rng.random() > 0.3
    shapes = []
    for s in range(12):
        median = rng.uniform(5, 500)
        shapes.append(
            {
                "shape": f"{2**s}x{4096 // 2 ** (s % 6)}",
                "set": "hidden" if s >= 8 else "public",
                "hidden": s >= 8,
                "ok": ok,
                "params": {"rows": 2**s, "cols": 4096},
                "weight": 1.0,
                "error": {"max_abs": 1e-6, "max_rel": 1e-5},
                "timing": {
                    "n": 200,
                    "mean_us": median * 1.02,
                    "sem_pct": 0.4,
                    "median_us": median,
                    "p10_us": median * 0.97,
                    "p90_us": median * 1.05,
                    "min_us": median * 0.95,
                    "max_us": median * 1.4,
                    "total_ms": median * 0.2,
                },
                "floor_us": median / 3,
                "roofline_pct": 33.0,
                "bound": "memory",
            }
        )
    geo = 1000.0 / (1 + n / 500) * rng.uniform(0.9, 1.1) if ok else None
    return {
        "task": "softmax",
        "candidate": f"c{n:05d}",
        "device": "cuda:0",
        "status": "ok" if ok else rng.choice(["wrong", "load_error", "rejected"]),
        "reasons": [] if ok else [{"kind": "numerical", "message": "max abs err 3.1e-2 > 1e-3"}],
        "shapes": shapes,
        "geomean_us": geo,
        "hidden_geomean_us": geo,
        "score_us": geo,
        "speedups": {"torch": 2.5, "seed": 1.3} if ok else {},
        "roofline_pct": 33.0 if ok else None,
        "comparable": True,
        "profile": {"launches": 3, "kernels": {"triton": 2, "aten": 1}},
        "wall_s": 4.2,
    }


def candidate_events(rng: random.Random, n: int, branch: str, family: str, parent: str | None):
    """The events of one candidate's life, as the engine appends them."""
    cand = f"c{n:05d}"
    yield ev.PROPOSAL_REQUESTED, {"parent": parent, "model": "tuner"}, branch, None
    proposed = {"parent": parent, "family": family, "model": "tuner", "source_hash": f"{n:016x}"}
    yield ev.CANDIDATE_PROPOSED, proposed, branch, cand
    yield ev.EVALUATION_STARTED, {"worker": n % 4, "device": f"cuda:{n % 4}"}, branch, cand
    yield ev.EVALUATION_FINISHED, fake_result(rng, n), branch, cand
    yield ev.CANDIDATE_COMMITTED, {"commit_sha": f"{n:040x}"}, branch, cand


def build(record: SessionRecord, n_candidates: int, n_events: int, out: dict) -> None:
    rng = random.Random(7)
    beam = [f"b{i}" for i in range(4)]
    for i, b in enumerate(beam):
        record.append(ev.BRANCH_CREATED, {"family": FAMILIES[i], "model": "tuner"}, branch=b)
    best: dict[str, tuple[str, float]] = {}
    next_branch = len(beam)
    start = appended = record.last_event_id()
    per_candidate = max(0, n_events - start) / n_candidates
    durable_t = durable_n = grouped_t = grouped_n = 0.0
    for n in range(1, n_candidates + 1):
        branch = beam[n % len(beam)]
        family = FAMILIES[int(branch[1:]) % len(FAMILIES)]
        parent = best.get(branch, (None, 0.0))[0]
        group = list(candidate_events(rng, n, branch, family, parent))
        res = group[3][1]
        if res["score_us"] is not None and res["score_us"] < best.get(branch, ("", 1e99))[1]:
            payload = {"candidate": f"c{n:05d}", "score_us": res["score_us"]}
            group.append((ev.BEST_CHANGED, payload, branch, f"c{n:05d}"))
            best[branch] = (f"c{n:05d}", res["score_us"])
        if n % 500 == 0:  # a plateau retires a branch and a fork replaces it
            old = beam.pop(0)
            new = f"b{next_branch}"
            next_branch += 1
            group.append((ev.PLATEAU_DETECTED, {"evaluations_since_best": 40}, old, None))
            group.append((ev.BRANCH_STATE, {"state": "retired", "reason": "plateau"}, old, None))
            fork = {"from_branch": old, "from_candidate": best.get(old, ("c00001",))[0]}
            fork |= {"family": rng.choice(FAMILIES), "model": "tuner", "instruction": None}
            group.append((ev.BRANCH_FORKED, fork, new, None))
            beam.append(new)
        target = start + round(per_candidate * n)
        while appended + len(group) < target:  # engine chatter: notes to reach the event count
            group.append((ev.NOTE, {"text": "tuner: trying BLOCK=256, num_warps=8"}, branch, None))
        appended += len(group)

        if durable_n < DURABLE_SAMPLE:  # one transaction (one fsync) per event
            t0 = time.perf_counter()
            for kind, payload, b, c in group:
                record.append(kind, payload, branch=b, candidate=c)
            durable_t += time.perf_counter() - t0
            durable_n += len(group)
        else:  # one transaction per candidate
            t0 = time.perf_counter()
            with record.transaction():
                for kind, payload, b, c in group:
                    record.append(kind, payload, branch=b, candidate=c)
            grouped_t += time.perf_counter() - t0
            grouped_n += len(group)
    out["append_durable_events_per_s"] = durable_n / durable_t
    out["append_durable_us_per_event"] = durable_t / durable_n * 1e6
    out["append_grouped_events_per_s"] = grouped_n / grouped_t
    out["candidate_record_ms"] = durable_t / durable_n * (appended / n_candidates) * 1e3


def bench_git(folder: Path, out: dict) -> None:
    rng = random.Random(3)
    repo = CandidateRepo(folder / "repo")
    tips: dict[str, str] = {}
    t0 = time.perf_counter()
    for n in range(GIT_SAMPLE):
        branch = f"b{n % 4}"
        source = "import triton\n" + "".join(f"# line {i} {rng.random()}\n" for i in range(120))
        msg = format_commit_message(f"c{n:05d}", fake_result(rng, n), branch=branch)
        tips[branch] = repo.commit_candidate(
            branch, f"c{n:05d}", "kernel.py", source, msg, tips.get(branch)
        )
        if n % 10 == 0:
            repo.tag_best(branch, tips[branch])
    out["git_commit_ms"] = (time.perf_counter() - t0) / GIT_SAMPLE * 1e3
    repo.close()


STATUS_SNIPPET = """
import sys, time
t0 = time.perf_counter()
from cockpit.store import SessionRecord
with SessionRecord.open_readonly(sys.argv[1]) as r, r.snapshot():
    meta, counts, branches, cands = r.meta(), r.counts(), r.branches(), r.candidates()
    best = min((b.best_us for b in branches if b.best_us is not None), default=None)
print(time.perf_counter() - t0, len(cands))
"""


def bench_status(folder: Path, out: dict) -> None:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        with SessionRecord.open_readonly(folder) as r, r.snapshot():
            r.meta(), r.counts(), r.branches()
            cands = r.candidates()
        times.append(time.perf_counter() - t0)
    assert len(cands) >= 10_000 or len(cands) > 0
    out["status_read_ms"] = min(times) * 1e3
    out["status_candidates"] = len(cands)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", STATUS_SNIPPET, str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    out["status_process_ms"] = (time.perf_counter() - t0) * 1e3
    out["status_in_process_after_import_ms"] = float(proc.stdout.split()[0]) * 1e3


def bench_replay(folder: Path, out: dict) -> None:
    with SessionRecord.open_readonly(folder) as r:
        t0 = time.perf_counter()
        reader = ReplayReader(r)
        out["replay_load_s"] = time.perf_counter() - t0
        n = len(reader)
        last = r.last_event_id()
        t0 = time.perf_counter()
        state = reader.state_at(last)
        out["replay_apply_events_per_s"] = n / (time.perf_counter() - t0)
        assert len(state.candidates()) == r.counts()["candidates"]
        t0 = time.perf_counter()
        reader.state_at(last // 2 + 1234)  # backwards: from the nearest checkpoint
        out["replay_seek_back_ms"] = (time.perf_counter() - t0) * 1e3
        reader.seek(reader.start_t - 1)
        t0 = time.perf_counter()
        delivered = sum(1 for _ in reader)
        out["replay_deliver_events_per_s"] = delivered / (time.perf_counter() - t0)
    with SessionRecord.open(folder) as r:
        t0 = time.perf_counter()
        r.rebuild()
        out["rebuild_s"] = time.perf_counter() - t0


def bench_telemetry(record: SessionRecord, out: dict) -> None:
    now = time.time()
    t0 = time.perf_counter()
    for s in range(600):  # ten minutes of one sample a second on 4 GPUs, one batch per second
        record.add_telemetry(
            [
                {"t": now + s, "gpu": g, "util": 90.0, "mem_used": 1e4, "power_w": 300.0}
                for g in range(4)
            ]
        )
    out["telemetry_batch_ms"] = (time.perf_counter() - t0) / 600 * 1e3
    t0 = time.perf_counter()
    samples = record.telemetry(since_t=now + 300)
    out["telemetry_read_5min_ms"] = (time.perf_counter() - t0) * 1e3
    assert len(samples) == 299 * 4


def machine() -> dict:
    cpu = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )
    git_version = subprocess.run(
        ["git", "--version"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "git": git_version,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    out: dict = {"candidates": args.candidates, "events": args.events}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        folder = create_session("bench", task="softmax", device="cuda", sessions_dir=tmp)
        t0 = time.perf_counter()
        with SessionRecord.open(folder) as record:
            record.acquire_engine_lock()
            build(record, args.candidates, args.events, out)
            out["build_s"] = time.perf_counter() - t0
            out["events_recorded"] = record.last_event_id()
            bench_telemetry(record, out)
        out["db_mb"] = (folder / "session.db").stat().st_size / 2**20
        bench_git(folder, out)
        bench_status(folder, out)
        bench_replay(folder, out)

    rows = [
        (
            "append, durable (1 txn + fsync / event)",
            f"{out['append_durable_events_per_s']:,.0f} ev/s",
            f"{out['append_durable_us_per_event']:.0f} µs/event",
        ),
        (
            "append, grouped (1 txn / candidate)",
            f"{out['append_grouped_events_per_s']:,.0f} ev/s",
            "",
        ),
        ("record one candidate (~10 events, durable)", f"{out['candidate_record_ms']:.2f} ms", ""),
        (
            "git commit + ref + fsync",
            f"{out['git_commit_ms']:.2f} ms / candidate",
            f"{GIT_SAMPLE} commits",
        ),
        ("telemetry batch (4 GPUs)", f"{out['telemetry_batch_ms']:.2f} ms", ""),
        (
            "status read (ro open, meta, counts, branches, all candidates)",
            f"{out['status_read_ms']:.0f} ms",
            f"{out['status_candidates']:,} candidates",
        ),
        (
            "status as a fresh python process",
            f"{out['status_process_ms']:.0f} ms",
            f"{out['status_in_process_after_import_ms']:.0f} ms after startup",
        ),
        (
            "replay: load events",
            f"{out['replay_load_s']:.2f} s",
            f"{out['events_recorded']:,} events",
        ),
        (
            "replay: re-apply all events (state_at end)",
            f"{out['replay_apply_events_per_s']:,.0f} ev/s",
            "",
        ),
        ("replay: seek back (from checkpoint)", f"{out['replay_seek_back_ms']:.0f} ms", ""),
        ("replay: deliver events in order", f"{out['replay_deliver_events_per_s']:,.0f} ev/s", ""),
        ("rebuild() derived tables", f"{out['rebuild_s']:.2f} s", ""),
        ("session.db size", f"{out['db_mb']:.0f} MiB", ""),
    ]
    table = Table(
        title=f"session record: {args.candidates:,} candidates, {out['events_recorded']:,} events"
    )
    for col in ("measure", "result", "note"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console = Console()
    console.print(table)
    out["machine"] = machine()
    out["command"] = "python bench/bench_store.py " + " ".join(sys.argv[1:])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
