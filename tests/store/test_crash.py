"""SIGKILL at random moments: the record and the repository survive, and nothing reported is lost."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

from cockpit.store import SessionRecord

KILLS = 6


def git_ok(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)


def test_sigkill_loses_nothing_reported_and_leaves_sqlite_and_git_sound(
    session_dir: Path, child
) -> None:
    rng = random.Random(20260530)
    repo = session_dir / "repo"
    reported_events: list[int] = []
    reported_commits: dict[str, str] = {}
    previous_pid = 0
    for _ in range(KILLS):
        proc = child("crasher", str(session_dir))
        ready = proc.stdout.readline().split()
        assert ready and ready[0] == "ready", proc.stderr.read()
        assert int(ready[1]) == previous_pid  # the stale lock of the killed one was taken over
        time.sleep(rng.uniform(0.05, 0.5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        previous_pid = proc.pid
        # a report is a whole line: whatever follows the last newline was cut by the kill
        for line in proc.stdout.read().split("\n")[:-1]:
            word, *rest = line.split()
            if word == "event":
                reported_events.append(int(rest[0]))
            elif word == "commit":
                reported_commits[rest[0]] = rest[1]

        with SessionRecord.open_readonly(session_dir) as viewer:
            assert viewer.integrity_check() == "ok"
            recorded = {e.id for e in viewer.events()}
            assert set(reported_events) <= recorded
            shas = {c.id: c.commit_sha for c in viewer.candidates() if c.commit_sha}
        fsck = git_ok(repo, "fsck", "--strict", "--full", "--no-dangling")
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        for sha in [*reported_commits.values(), *shas.values()]:  # nothing points into the void
            assert git_ok(repo, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0

    assert len(reported_commits) > 3 * KILLS  # the loop really ran between kills
    log = git_ok(repo, "log", "--all", "--format=%s").stdout.split("\n")
    assert {s.split()[0] for s in log if s} >= set(reported_commits)
