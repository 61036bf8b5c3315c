"""Soak run: a real `cockpit run` on the CPU, against a scripted provider that mixes good, wrong,
raising, hanging, flooding and duplicate candidates, replies without usable code, and provider
errors (429, 500, a stream dropped half-way); at the end every evaluation is accounted for.

    python bench/soak.py --evals 200            # the full run (a few minutes on one core)
    python bench/soak.py --evals 40 --json      # the report as JSON

The proposer is the product's LLM agent (profile written here) talking to the OpenAI-compatible
server of tests/agents/fake_provider.py on 127.0.0.1; the task is the toy task of
tests/engine/toytask with tight per-call limits (so a hang costs about two seconds, not a
minute). Checks, each a line of the report's `problems` when it fails:

- the session ended `done` with the evaluation budget spent exactly;
- every candidate the record holds has a verdict and a commit that exists in the session's git
  repository; every request the server received is counted in the record (the spend ledger);
- the kinds of verdict the script asks for all occur (ok, wrong, timeout, one naming a raising
  candidate's exception, and a flood whose output was truncated);
- SQLite's `PRAGMA integrity_check` of session.db is `ok` and `git fsck --full` is clean;
- the API key set for the run is in no byte of the session folder and no commit;
- no process started for the run is left (every process whose environment carries this run's
  sessions folder, found with psutil).

`tests/test_soak.py` runs a bounded one in CI; exit status 1 here when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOYTASK = ROOT / "tests" / "engine" / "toytask"
COCKPIT = (sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())")
# a hang ends at the per-call limit: about a second, plus a second on a shape's first call
LIMITS = "\n[limits]\ncpu_call_floor_s = 1\ncpu_first_call_s = 1\n"

HEAD = "import torch\n\nFAMILY = 'baseline'\n\n"


def _good(i: int) -> str:
    return (
        HEAD
        + f"\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n    y = x * 2 + 1\n    return y + 0 * {i}\n"
    )


def _wrong(i: int) -> str:
    return HEAD + f"\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n    return x * 2 + {i + 2}\n"


def _raising(i: int) -> str:
    return HEAD + (
        f"\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n"
        f"    raise RuntimeError('broken kernel {i}')\n"
    )


def _hanging(i: int) -> str:
    return HEAD + (
        f"\ndef kernel(x: torch.Tensor) -> torch.Tensor:\n"
        f"    n = {i}\n    while True:\n        n += 1\n"
    )


def _flooding(i: int) -> str:
    # 4 MiB at import and 256 KiB on every call: the judge keeps the first and last 64 KiB
    return (
        "import sys\n\nimport torch\n\nFAMILY = 'baseline'\n\n"
        "sys.stdout.write('f' * (4 << 20))\n\n\n"
        f"def kernel(x: torch.Tensor) -> torch.Tensor:\n"
        f"    sys.stdout.write('g' * (256 << 10))\n    return x * 2 + 1 + 0 * {i}\n"
    )


def _fenced(source: str) -> str:
    return f"Here is the new kernel.\n\n```python\n{source}```\n\nIt should do.\n"


# one turn of the script: (kind, what the server answers); good candidates are interleaved with
# the rest so that no branch meets `max_unusable` unusable replies in a row
PATTERN = (
    "good",
    "wrong",
    "429",
    "good",
    "raising",
    "prose",
    "good",
    "hanging",
    "500",
    "good",
    "flooding",
    "duplicate",
    "good",
    "syntax",
    "cut",
    "good",
    "wrong",
)


class Script:
    """The provider's replies, generated on demand, round and round PATTERN."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = itertools.count()
        self.goods: list[str] = []
        self.served: dict[str, int] = {}

    def next(self) -> Any:
        from fake_provider import Reply

        with self.lock:
            i = next(self.count)
            kind = PATTERN[i % len(PATTERN)]
            if kind == "duplicate" and not self.goods:
                kind = "good"
            self.served[kind] = self.served.get(kind, 0) + 1
            if kind == "good":
                src = _good(i)
                self.goods.append(src)
                return Reply(text=_fenced(src))
            if kind == "duplicate":
                return Reply(text=_fenced(self.goods[i % len(self.goods)]))
        if kind == "429":
            return Reply(status=429, retry_after="0")
        if kind == "500":
            return Reply(status=500)
        if kind == "cut":
            return Reply(text=_fenced(_good(i)), cut=True)
        if kind == "prose":
            return Reply(text="I would keep the row in registers; let me think about it.")
        if kind == "syntax":
            return Reply(text=_fenced(HEAD + "def kernel(x):\n    return (x * 2 + 1\n"))
        make = {"wrong": _wrong, "raising": _raising, "hanging": _hanging, "flooding": _flooding}
        return Reply(text=_fenced(make[kind](i)))


def _task(workdir: Path) -> Path:
    import shutil

    task = workdir / "soaktask"
    shutil.copytree(TOYTASK, task)
    toml = task / "task.toml"
    text = toml.read_text().replace("time_limit_s = 60", "time_limit_s = 30")
    toml.write_text(text + LIMITS)
    return task


def _profile(workdir: Path, base: str) -> Path:
    path = workdir / "soak-agent.md"
    path.write_text(
        "---\nproposer: llm\nmodel: openai/soak-scripted\n"
        f"api_base: {base}\nretries: 2\nbackoff_s: 0.01\ntimeout_s: 20\nstream: true\n"
        "max_tokens: 2000\nmax_unusable: 8\n---\nYou write fast, correct kernels.\n"
    )
    return path


def _children() -> dict[int, float]:
    """This process's descendants now (pid -> start time)."""
    import psutil

    out: dict[int, float] = {}
    for c in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            out[c.pid] = c.create_time()
    return out


def _left_behind(marker: str, seen: dict[int, float], before: dict[int, float]) -> list[str]:
    """Processes of the run still alive: this process's children that were not there before the
    run (a test runner's own resource tracker is not the run's), every descendant of the run
    sampled while it ran (the same pid and start time), and any process whose environment
    carries the run's sessions folder (engine and workers; arenas get a scrubbed one)."""
    from multiprocessing import resource_tracker

    import psutil

    own_tracker = getattr(resource_tracker._resource_tracker, "_pid", None)
    alive: dict[int, psutil.Process] = {}
    for c in psutil.Process().children(recursive=True):
        if c.pid == own_tracker:
            continue  # this process's own tracker (the test runner's), not the run's
        with contextlib.suppress(psutil.NoSuchProcess):
            started = before.get(c.pid)
            if started is not None and abs(c.create_time() - started) < 0.05:
                continue
            alive[c.pid] = c
    for pid, started in seen.items():
        try:
            p = psutil.Process(pid)
            if abs(p.create_time() - started) < 0.05 and p.status() != psutil.STATUS_ZOMBIE:
                alive[pid] = p
        except psutil.NoSuchProcess:
            pass
    for p in psutil.process_iter(["pid"]):
        if p.pid == os.getpid() or p.pid in alive:
            continue
        try:
            if p.environ().get("COCKPIT_SESSIONS_DIR") == marker:
                alive[p.pid] = p
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess, OSError):
            continue
    out = []
    for pid, p in sorted(alive.items()):
        try:
            out.append(f"{pid} {' '.join(p.cmdline())[:120]}")
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return out


def run_soak(evals: int, workdir: Path, beam: int = 2, timeout_s: float = 3600) -> dict[str, Any]:
    """One soak run in `workdir`; the report (with `problems`, empty when every check holds)."""
    sys.path.insert(0, str(ROOT / "tests" / "agents"))
    import fake_provider

    workdir.mkdir(parents=True, exist_ok=True)
    sessions = workdir / "sessions"
    script = Script()
    provider = fake_provider.start()
    provider.next = script.next
    env = {
        **os.environ,
        "COCKPIT_SESSIONS_DIR": str(sessions),
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-soak-not-a-key",
    }
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
        env.pop(var, None)
    t0 = time.monotonic()
    before = _children()
    seen: dict[int, float] = {}  # every process the run started (pid -> start time), sampled
    try:
        proc = subprocess.Popen(
            [
                *COCKPIT,
                "run",
                str(_task(workdir)),
                "--session",
                "soak",
                "--agent",
                str(_profile(workdir, provider.openai_base)),
                "--budget",
                str(evals),
                "--beam",
                str(beam),
                "--plateau",
                "100000",
                "--device",
                "cpu",
                "--mode",
                "quick",
                "--headless",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
        )
        sampler = threading.Thread(target=_sample, args=(proc, seen), daemon=True)
        sampler.start()
        try:
            _out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
        sampler.join(5)
    finally:
        provider.server.shutdown()
        provider.server.server_close()
    wall = time.monotonic() - t0
    report = {
        "evals": evals,
        "wall_s": round(wall, 1),
        "rc": proc.returncode,
        "served": dict(script.served),
        "requests_received": len(provider.received),
    }
    report.update(_account(sessions / "soak", env, len(provider.received)))
    # a process that is about to exit is not "left behind": a resource tracker, for one, ends
    # only once every process that used it has closed its pipe; give them 15 s
    deadline = time.monotonic() + 15.0
    left = _left_behind(str(sessions), seen, before)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _left_behind(str(sessions), seen, before)
    report["processes_seen"] = len(seen)
    report["left_behind"] = left
    if proc.returncode != 0:
        report["problems"].insert(0, f"cockpit run exited {proc.returncode}: {err[-500:]}")
    if left:
        report["problems"].append(f"{len(left)} processes left behind: {left[:3]}")
    return report


def _sample(proc: subprocess.Popen, seen: dict[int, float]) -> None:
    """Note every descendant of `proc` (engine, workers, arenas) while it runs."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        return
    while proc.poll() is None:
        try:
            for c in root.children(recursive=True):
                with contextlib.suppress(psutil.NoSuchProcess):
                    seen.setdefault(c.pid, c.create_time())
        except psutil.NoSuchProcess:
            return
        time.sleep(0.1)


def _account(folder: Path, env: dict[str, str], received: int) -> dict[str, Any]:
    """What the record says, and the checks against it."""
    from cockpit.cli.loop import status_dict
    from cockpit.store import SessionRecord
    from cockpit.store import events as ev

    problems: list[str] = []
    st = status_dict(folder)
    with SessionRecord.open_readonly(folder) as rec:
        cands = rec.candidates()
        proposed = rec.events(kinds=[ev.CANDIDATE_PROPOSED])
        finished = rec.events(kinds=[ev.EVALUATION_FINISHED])
        committed = {
            e.candidate: e.payload.get("commit_sha")
            for e in rec.events(kinds=[ev.CANDIDATE_COMMITTED])
        }
        failed = rec.events(kinds=[ev.PROPOSAL_FAILED])
    statuses: dict[str, int] = {}
    for c in cands:
        statuses[str(c.status)] = statuses.get(str(c.status), 0) + 1
    truncated = sum(
        1
        for e in finished
        if "output truncated" in json.dumps(e.payload.get("reasons") or [])
        or "output truncated" in json.dumps(e.payload.get("flags") or [])
    )
    if st["state"] != "done":
        problems.append(f"the session ended {st['state']} ({st['reason']}), not done")
    if st["evaluations"] != st["budget"]:
        problems.append(f"{st['evaluations']} evaluations recorded of a budget of {st['budget']}")
    if len(proposed) != len(cands):
        problems.append(f"{len(proposed)} candidates proposed, {len(cands)} in the record")
    unjudged = [c.id for c in cands if c.status is None]
    if unjudged:
        problems.append(f"candidates without a verdict: {unjudged[:10]}")
    repo = folder / "repo"
    missing = [c.id for c in cands if not committed.get(c.id)]
    if missing:
        problems.append(f"candidates never committed: {missing[:10]}")
    for cid, sha in committed.items():
        r = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True
        )
        if r.returncode:
            problems.append(f"{cid}'s commit {sha} is not in the repository")
    if st["spend"]["requests"] != received:
        problems.append(
            f"the server received {received} requests, the record counts {st['spend']['requests']}"
        )
    for want in ("ok", "wrong", "timeout"):
        if not statuses.get(want):
            problems.append(f"no candidate judged {want}: {statuses}")
    raised = sum(
        1
        for e in finished
        if "RuntimeError: broken kernel" in json.dumps(e.payload.get("reasons") or [])
    )
    if not raised:
        problems.append(f"no verdict names a raising candidate's exception: {statuses}")
    if not truncated:
        problems.append("no verdict says its output was truncated")
    leaks = _key_leaks(folder, env["OPENAI_API_KEY"])
    if leaks:
        problems.append(f"the API key is in {leaks[:5]}")
    con = sqlite3.connect(f"file:{folder / 'session.db'}?mode=ro", uri=True)
    try:
        integrity = con.execute("PRAGMA integrity_check").fetchall()
    finally:
        con.close()
    if integrity != [("ok",)]:
        problems.append(f"PRAGMA integrity_check: {integrity[:3]}")
    fsck = subprocess.run(
        ["git", "-C", str(repo), "fsck", "--full", "--strict"], capture_output=True, text=True
    )
    bad = [
        ln
        for ln in (fsck.stdout + fsck.stderr).splitlines()
        if ln and not ln.startswith(("dangling ", "Checking ", "notice: "))
    ]
    if fsck.returncode or bad:
        problems.append(f"git fsck: rc {fsck.returncode}: {bad[:3]}")
    return {
        "state": st["state"],
        "reason": st["reason"],
        "evaluations": st["evaluations"],
        "candidates": len(cands),
        "statuses": statuses,
        "truncated": truncated,
        "raised": raised,
        "proposal_failures": len(failed),
        "requests_recorded": st["spend"]["requests"],
        "integrity_check": integrity[0][0] if integrity else None,
        "git_fsck_rc": fsck.returncode,
        "problems": problems,
    }


def _key_leaks(folder: Path, key: str) -> list[str]:
    """Where the key's bytes occur: any file of the session folder, or the git history."""
    found = []
    needle = key.encode()
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                if needle in path.read_bytes():
                    found.append(str(path.relative_to(folder)))
    log = subprocess.run(
        ["git", "-C", str(folder / "repo"), "log", "--all", "-p", "--format=%H %B"],
        capture_output=True,
    )
    if needle in log.stdout:
        found.append("git history")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evals", type=int, default=200, help="evaluation budget (default 200)")
    ap.add_argument("--beam", type=int, default=2)
    ap.add_argument("--dir", type=Path, help="work folder (default: a temporary one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.evals < 1:
        ap.error("--evals must be at least 1")
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="cockpit-soak-"))
    report = run_soak(args.evals, workdir, beam=args.beam)
    report["workdir"] = str(workdir)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for k, v in report.items():
            print(f"{k}: {v}")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
