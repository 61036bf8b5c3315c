"""CandidateRepo on real git repositories: commits without checkout, forks, tags, fsck."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cockpit.store.gitrepo import CandidateRepo, RefLocked, format_commit_message


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return out.stdout


def src(n: int) -> str:
    return f"def kernel(x):\n    return x * {n}\n"


@pytest.fixture
def repo(tmp_path: Path) -> CandidateRepo:
    r = CandidateRepo(tmp_path / "repo")
    yield r
    r.close()


def test_new_repo_is_plain_and_identifies_as_cockpit(repo: CandidateRepo) -> None:
    assert (repo.path / ".git").is_dir()
    assert git(repo.path, "config", "user.name").strip() == "cockpit"
    assert git(repo.path, "config", "user.email").strip() == "cockpit"


def test_commits_on_two_branches_touch_no_working_tree(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1.00us")
    b = repo.commit_candidate("b2", "c2", "kernel.py", src(2), "c2 ok 2.00us")
    assert repo.branches() == {"b1": a, "b2": b}
    assert sorted(p.name for p in repo.path.iterdir()) == [".git"]  # nothing checked out
    assert not (repo.path / ".git" / "index").exists()
    assert repo.read_source(a) == src(1) and repo.read_source(b) == src(2)


def test_child_commit_has_its_parent_candidate_as_first_parent(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1.00us")
    b = repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok 0.50us", parent_sha=a)
    assert git(repo.path, "rev-parse", f"{b}^1").strip() == a
    assert repo.tip("b1") == b


def test_fork_commit_has_its_parent_on_another_branch(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1.00us")
    f = repo.commit_candidate("b9", "c9", "kernel.py", src(9), "c9 ok 0.90us", parent_sha=a)
    assert git(repo.path, "log", "--format=%H", "b9").split() == [f, a]
    assert git(repo.path, "merge-base", "--is-ancestor", a, "b9") == ""
    assert repo.tip("b1") == a  # the origin branch did not move


def test_failed_sibling_stays_reachable_from_its_branch(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1.00us")
    bad = repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 wrong -", parent_sha=a)
    c = repo.commit_candidate("b1", "c3", "kernel.py", src(3), "c3 ok 0.80us", parent_sha=a)
    assert git(repo.path, "rev-parse", f"{c}^1", f"{c}^2").split() == [a, bad]
    subjects = git(repo.path, "log", "--date-order", "--format=%s", "b1").splitlines()
    assert subjects == ["c3 ok 0.80us", "c2 wrong -", "c1 ok 1.00us"]
    lineage = git(repo.path, "log", "--first-parent", "--format=%s", "b1").splitlines()
    assert lineage == ["c3 ok 0.80us", "c1 ok 1.00us"]


def test_tag_best_moves_a_lightweight_tag(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1.00us")
    b = repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok 0.50us", parent_sha=a)
    repo.tag_best("b1", a)
    repo.tag_best("b1", b)
    assert repo.best("b1") == b
    assert git(repo.path, "cat-file", "-t", "best/b1").strip() == "commit"  # lightweight
    assert git(repo.path, "tag", "--list").split() == ["best/b1"]


def test_git_log_tells_the_story_with_verdicts_and_metrics(repo: CandidateRepo) -> None:
    res = {
        "status": "ok",
        "geomean_us": 12.345,
        "score_us": 13.0,
        "speedups": {"torch": 2.5},
        "roofline_pct": 41.0,
        "reasons": [],
    }
    msg = format_commit_message("c1", res, branch="b1", family="online", model="tuner")
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), msg)
    bad = {"status": "wrong", "reasons": [{"kind": "numerical", "message": "err 1e-1\nmore"}]}
    msg = format_commit_message("c2", bad, branch="b1", parent="c1")
    repo.commit_candidate("b1", "c2", "kernel.py", src(2), msg, parent_sha=a)
    log = git(repo.path, "log", "--format=%s%n%b--")  # plain `git log`: HEAD is the branch
    assert "c2 wrong -\n" in log and "- numerical: err 1e-1\n" in log and "Parent: c1" in log
    assert "c1 ok 12.35us\n" in log and "speedup vs torch: 2.50x" in log
    assert "roofline: 41.0%" in log and "Family: online" in log
    assert [i.candidate for i in repo.log("b1")] == ["c2", "c1"]


def test_fsck_is_clean_after_commits_forks_and_tags(repo: CandidateRepo) -> None:
    tips: dict[str, str] = {}
    for n in range(30):
        branch = f"b{n % 3}"
        parent = tips.get(f"b{(n + 1) % 3}") if n % 5 == 0 else tips.get(branch)
        tips[branch] = repo.commit_candidate(
            branch, f"c{n}", "kernel.py", src(n), f"c{n} ok {n}us", parent
        )
        if n % 4 == 0:
            repo.tag_best(branch, tips[branch])
    out = subprocess.run(
        ["git", "fsck", "--strict", "--full"], cwd=repo.path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "dangling" not in out.stdout + out.stderr  # every attempt is reachable


def test_committing_the_branch_tip_again_returns_it(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1us")
    b = repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok 1us", parent_sha=a)
    again = repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok 1us", parent_sha=a)
    assert again == b
    assert len(git(repo.path, "rev-list", "b1").split()) == 2


def test_diff_shows_the_change_between_parent_and_child(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok 1us")
    b = repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok 1us", parent_sha=a)
    diff = repo.diff(a, b)
    assert diff.startswith(f"--- a/kernel.py ({a[:10]})\n+++ b/kernel.py ({b[:10]})\n")
    assert "-    return x * 1\n+    return x * 2\n" in diff


def test_unknown_parent_is_refused(repo: CandidateRepo) -> None:
    with pytest.raises(ValueError, match="not in"):
        repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok", parent_sha="0" * 40)


def test_message_must_start_with_the_candidate_id(repo: CandidateRepo) -> None:
    with pytest.raises(ValueError, match="candidate id"):
        repo.commit_candidate("b1", "c1", "kernel.py", src(1), "improved things")


def test_stale_ref_lock_blocks_until_recover_removes_it(repo: CandidateRepo) -> None:
    a = repo.commit_candidate("b1", "c1", "kernel.py", src(1), "c1 ok")
    lock = repo.path / ".git" / "refs" / "heads" / "b1.lock"
    lock.write_text("")  # what a writer killed between lock and rename leaves
    (repo.path / ".git" / "objects" / "objXYZ").write_bytes(b"partial")
    with pytest.raises(RefLocked):
        repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok", parent_sha=a)
    assert sorted(repo.recover()) == ["objects/objXYZ", "refs/heads/b1.lock"]
    assert repo.commit_candidate("b1", "c2", "kernel.py", src(2), "c2 ok", parent_sha=a)


def test_bad_branch_names_are_refused(repo: CandidateRepo) -> None:
    for name in ("", "a/b", "x..y", "b.lock", "-x", "a b"):
        with pytest.raises(ValueError):
            repo.commit_candidate(name, "c1", "kernel.py", src(1), "c1 ok")
