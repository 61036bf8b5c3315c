"""A full headless run of the toy task to its budget: record, repository and `status --json`."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_helpers import RUN_OPTS, TOYTASK, Cockpit, git

from cockpit.store import SessionRecord
from cockpit.store import events as ev

BUDGET = 6


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cockpit, dict, str]:
    tmp = tmp_path_factory.mktemp("run")
    c = Cockpit(sessions=tmp / "sessions", cwd=tmp)
    try:
        proc = c("run", str(TOYTASK), "--session", "full", "--budget", str(BUDGET), "--beam", "3",
                 *RUN_OPTS, timeout=240)
    finally:
        c.kill_all()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return c, c.status("full"), proc.stdout


def test_headless_run_ends_done_with_the_budget_spent(finished_run) -> None:
    _, st, out = finished_run
    assert st["state"] == "done"
    assert st["pid"] is None
    assert st["evaluations"] == BUDGET
    assert st["budget"] == BUDGET
    assert "session full: done" in out
    # why it ended, in one sentence, before the last line
    assert f"session done: budget spent: {BUDGET}/{BUDGET} evaluations\n" in out
    assert st["ended"] == f"budget spent: {BUDGET}/{BUDGET} evaluations"


def test_headless_run_prints_one_line_per_evaluation(finished_run) -> None:
    _, st, out = finished_run
    lines = [line for line in out.splitlines() if line.split()[:1] and line.split()[0].startswith("c0")]
    assert len(lines) == st["candidates"]


def test_status_json_has_the_documented_keys(finished_run) -> None:
    _, st, _ = finished_run
    assert {"session", "task", "state", "pid", "candidates", "branches", "best", "candidate_list"} <= set(st)
    assert st["session"] == "full" and st["task"] == "toyscale"
    assert isinstance(st["candidates"], int) and st["candidates"] == len(st["candidate_list"])
    assert len(st["branches"]) == 3
    for b in st["branches"]:
        assert {"id", "family", "state", "model", "best_us"} <= set(b)
    for cand in st["candidate_list"]:
        assert {"id", "branch", "family", "status", "geomean_us"} <= set(cand)
    assert {"candidate", "branch", "score_us"} <= set(st["best"])


def test_every_candidate_is_a_commit_on_its_branch(finished_run) -> None:
    c, st, _ = finished_run
    repo = c.folder("full") / "repo"
    log = git(repo, "log", "--all", "--oneline")
    assert log.returncode == 0, log.stderr
    subjects = [line.split()[1] for line in log.stdout.splitlines()]
    assert sorted(subjects) == sorted(x["id"] for x in st["candidate_list"])
    with SessionRecord.open_readonly(c.folder("full")) as rec:
        for cand in rec.candidates():
            assert cand.commit_sha, cand.id
            body = git(repo, "log", "-1", "--format=%B", cand.commit_sha).stdout
            assert body.startswith(f"{cand.id} {cand.status}")
            assert f"Branch: {cand.branch}" in body
            assert git(repo, "merge-base", "--is-ancestor", cand.commit_sha, f"refs/heads/{cand.branch}").returncode == 0


def test_each_branch_with_a_best_has_a_best_tag_on_its_commit(finished_run) -> None:
    c, st, _ = finished_run
    folder = c.folder("full")
    shas = {x.id: x.commit_sha for x in SessionRecord.open_readonly(folder).candidates()}
    with_best = [b for b in st["branches"] if b["best_candidate"]]
    assert with_best
    for b in with_best:
        tag = git(folder / "repo", "rev-parse", f"refs/tags/best/{b['id']}")
        assert tag.returncode == 0, f"no best tag for {b['id']}"
        assert tag.stdout.strip() == shas[b["best_candidate"]]


def test_the_tuner_beats_the_seed_it_started_from(finished_run) -> None:
    c, st, _ = finished_run
    folder = c.folder("full")
    with SessionRecord.open_readonly(folder) as rec:
        cands = rec.candidates()
        seeds = [x for x in cands if x.parent is None and x.status == "ok"]
        tuned = [x for x in cands if x.parent is not None and x.status == "ok" and x.family == "chunked"]
        bests = rec.events(kinds=[ev.BEST_CHANGED])
    chunked_seed = next(x for x in seeds if x.family == "chunked")
    assert tuned, "the tuner proposed no passing chunked child"
    assert min(x.score_us for x in tuned) < chunked_seed.score_us / 1.5
    worst_seed = max(x.score_us for x in seeds)
    assert st["best"]["score_us"] < worst_seed
    # the improvement was recognised by the significance rule, not just measured
    assert any(e.payload.get("previous_candidate") == chunked_seed.id for e in bests)


def test_record_and_repository_are_sound_after_a_run(finished_run) -> None:
    c, _, _ = finished_run
    folder: Path = c.folder("full")
    with SessionRecord.open_readonly(folder) as rec:
        assert rec.integrity_check() == "ok"
        states = [e.payload["state"] for e in rec.events(kinds=[ev.SESSION_STATE])]
    assert states[-1] == "done"
    fsck = git(folder / "repo", "fsck", "--strict", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
