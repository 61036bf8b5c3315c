"""Roles the store tests play in a separate process: `python child.py ROLE SESSION_DIR [ARGS]`.

Each role prints one line per fact, flushed *after* the store call returns, so the parent knows
exactly what was durably recorded when it kills the child.
"""

from __future__ import annotations

import os
import sys
import time

from cockpit.store import SessionLocked, SessionRecord
from cockpit.store import events as ev


def say(*parts: object) -> None:
    """One report line in one write: print() writes its parts one by one, which an unbuffered
    stdout (PYTHONUNBUFFERED) turns into one write each, so a SIGKILL could cut a line."""
    sys.stdout.write(" ".join(map(str, parts)) + "\n")
    sys.stdout.flush()


def writer(session: str, n: str, delay: str) -> None:
    """An engine appending `n` notes, `delay` seconds apart."""
    with SessionRecord.open(session) as record:
        record.acquire_engine_lock()
        for i in range(int(n)):
            say("event", record.append(ev.NOTE, {"text": f"note {i}"}))
            time.sleep(float(delay))


def poster(session: str, k: str) -> None:
    """A TUI or `cockpit send`: post `k` commands, then wait until the engine acks them all."""
    with SessionRecord.open(session) as record:
        ids = [record.post_command("pause", {"branch": f"b{i}"}, "child") for i in range(int(k))]
        say("posted", *ids)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done = {c.id: c for c in record.commands() if c.id in ids and c.state != "pending"}
            if len(done) == len(ids):
                for i in ids:
                    say("acked", i, done[i].state, done[i].ack_message)
                return
            time.sleep(0.02)
        say("timeout")


def locker(session: str) -> None:
    """An engine that holds the lock until its stdin says otherwise."""
    with SessionRecord.open(session) as record:
        try:
            record.acquire_engine_lock()
        except SessionLocked as e:
            say("refused", e)
            return
        say("locked", os.getpid())
        sys.stdin.readline()


def crasher(session: str) -> None:
    """An engine loop as fast as it can go: record a result, commit it, record the commit.

    It resumes a killed predecessor's session: takes over the stale engine lock, cleans the
    repository, and continues the numbering from what was recorded."""
    from cockpit.store.gitrepo import CandidateRepo, format_commit_message

    with SessionRecord.open(session) as record, CandidateRepo(f"{session}/repo") as repo:
        lock = record.acquire_engine_lock()
        repo.recover()
        say("ready", lock.previous_pid or 0)
        n = record.counts()["candidates"]
        parent = repo.tip("b0")
        while True:
            n += 1
            branch, cand = f"b{n % 3}", f"k{n:05d}"
            res = {"status": "ok", "reasons": [], "geomean_us": 100.0 / n, "score_us": 100.0 / n}
            with record.transaction():
                a = record.append(
                    ev.CANDIDATE_PROPOSED,
                    {"parent": None, "family": "f", "model": "m", "source_hash": cand},
                    branch=branch,
                    candidate=cand,
                )
                b = record.append(ev.EVALUATION_FINISHED, res, branch=branch, candidate=cand)
            say("event", a)
            say("event", b)
            source = f"# {cand}\ndef kernel(x):\n    return x * {n}\n" + "# pad\n" * (n % 50)
            message = format_commit_message(cand, res, branch=branch)
            sha = repo.commit_candidate(branch, cand, "kernel.py", source, message, parent)
            say("commit", cand, sha)
            say("event", record.append(ev.CANDIDATE_COMMITTED, {"commit_sha": sha}, branch, cand))
            if n % 5 == 0:
                repo.tag_best(branch, sha)
            parent = sha if n % 4 else None
            record.add_telemetry([{"t": time.time(), "cpu_pct": 50.0}])


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    {"writer": writer, "poster": poster, "locker": locker, "crasher": crasher}[role](*args)
