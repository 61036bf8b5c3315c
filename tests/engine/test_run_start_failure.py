"""`cockpit run` that fails to start leaves no session behind in state `created`: the folder it
made is removed, with one line saying so, and the error is one line with exit 2. Real `cockpit`
processes on a sessions folder in tmp_path."""

from __future__ import annotations

import pytest
from engine_helpers import RUN_OPTS, TOYTASK, Cockpit


@pytest.fixture
def cockpit(tmp_path):
    return Cockpit(sessions=tmp_path / "sessions", cwd=tmp_path)


def _bad_advisor(tmp_path):
    # the advisor field is checked when the proposer is made, i.e. when the engine starts
    path = tmp_path / "advised.md"
    path.write_text(
        "---\nproposer: llm\nmodel: openai/gpt-4o-mini\napi_base: http://127.0.0.1:9\n"
        "advisor: no-such-profile\n---\nYou write kernels.\n"
    )
    return path


@pytest.mark.parametrize("detach", [False, True], ids=["foreground", "detached"])
def test_a_run_that_fails_to_start_removes_its_session(cockpit, tmp_path, detach):
    agent = _bad_advisor(tmp_path)
    opts = ["--detach"] if detach else []
    r = cockpit(
        "run",
        str(TOYTASK),
        "--session",
        "nostart",
        "--agent",
        str(agent),
        "--budget",
        "2",
        *RUN_OPTS,
        *opts,
    )
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert "field 'advisor'" in r.stderr
    assert "session nostart removed: the run did not start" in r.stderr
    assert not (tmp_path / "sessions" / "nostart").exists()
    ls = cockpit("ls")
    assert "nostart" not in ls.stdout and "created" not in ls.stdout
    # the same command works once the cause is fixed: the name is free
    agent.write_text(agent.read_text().replace("advisor: no-such-profile\n", ""))
    r = cockpit(
        "run",
        str(TOYTASK),
        "--session",
        "nostart",
        "--agent",
        "tuner",
        "--budget",
        "1",
        "--beam",
        "1",
        *RUN_OPTS,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "sessions" / "nostart").is_dir()


def test_a_bad_model_string_is_refused_before_any_session_exists(cockpit, tmp_path):
    r = cockpit(
        "run",
        str(TOYTASK),
        "--session",
        "badmodel",
        "--model",
        "bad model",
        "--budget",
        "2",
        *RUN_OPTS,
    )
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.strip().count("\n") == 0 and "--model must be a model name" in r.stderr
    assert not (tmp_path / "sessions" / "badmodel").exists()
