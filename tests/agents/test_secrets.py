"""Secrets and privacy of a session folder, after real `cockpit run`s with provider keys set.

Two runs of an LLM agent on the toy task against the fake provider on 127.0.0.1 (one through the
OpenAI protocol, one through Anthropic Messages), with keys in the environment. The provider
quotes the credentials it received back in its error bodies, and one proposed kernel prints its
own environment and its parent's (the judge's): whatever the run records, no byte of any key may
reach the session folder (session.db, its WAL, logs, the transcript, every git object and the
history of repo/), nor the process's output. The folder is private to the user: the session
directory 0700 and nothing inside readable or writable by group or others.
"""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from agents_helpers import reply_with
from fake_provider import Reply

ROOT = Path(__file__).resolve().parents[2]
TOYTASK = ROOT / "tests" / "engine" / "toytask"
COCKPIT = (sys.executable, "-m", "cockpit.cli")
SECRETS = {
    "OPENAI_API_KEY": "sk-test-SECRET123-openai-4f9a7c2e1b",
    "ANTHROPIC_API_KEY": "sk-ant-test-SECRET456-anthropic-8d3b6a",
    "HF_TOKEN": "hf_SECRET789tokenvalue",
    "COCKPIT_TEST_SECRET": "plain-SECRET000-value",
}
GOOD = "import torch\n\nFAMILY = 'baseline'\n\n\ndef kernel(x):\n    return x * 2 + 1\n"
# a kernel that tries to read the keys from its own environment and its parent's (the judge's)
# and print them: the judge records a tail of its output in the verdict
SNOOP = (
    "import os\n\nimport numpy as np\nimport torch\n\nFAMILY = 'baseline'\n"
    "P = '/' + 'p' + 'roc/'\n"
    "for pid in ('self', str(os.getppid())):\n"
    "    try:\n"
    "        data = np.fromfile(P + pid + '/envir' + 'on', dtype=np.uint8).tobytes()\n"
    "    except Exception as exc:\n"
    "        data = repr(exc).encode()\n"
    "    print('SNOOP', pid, len(data), data)\n\n\n"
    "def kernel(x):\n    return x + x + 1\n"
)


def _script(provider) -> None:
    provider.push(
        Reply(status=500, echo_auth=True),  # retried; the error quotes the key
        reply_with(GOOD, prose=f"(I was told the key is {SECRETS['OPENAI_API_KEY']}.)"),
        Reply(status=429, echo_auth=True),
        reply_with(SNOOP),
        Reply(status=500, echo_auth=True),
    )
    provider.default = Reply(text=reply_with(GOOD.replace("x * 2", "2 * x")))


def _run(tmp_path: Path, profile: Path, name: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        **SECRETS,
        "PYTHONPATH": str(ROOT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"):
        env.pop(var, None)
    return subprocess.run(
        [*COCKPIT, "run", str(TOYTASK), "--session", name, "--agent", str(profile),
         "--budget", "4", "--beam", "1", "--device", "cpu", "--mode", "quick",
         "--sessions-dir", str(tmp_path / "sessions")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _needles() -> list[bytes]:
    """Every key, its distinctive middle, and the forms a header or a log could carry it in."""
    out = []
    for value in SECRETS.values():
        raw = value.encode()
        out += [raw, raw[4:-4], base64.b64encode(raw), raw.hex().encode()]
        out.append(("SECRET" + value.split("SECRET", 1)[1][:3]).encode())  # e.g. SECRET123
    return out


def _leaks(data: bytes, where: str) -> list[str]:
    return [f"{where}: {n!r}" for n in _needles() if n in data]


def _git(repo: Path, *args: str) -> bytes:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_no_key_reaches_the_session_folder_or_the_output_and_the_folder_is_private(
    provider, write_profile, tmp_path, protocol
):
    _script(provider)
    model, base = (
        ("openai/coder", provider.openai_base)
        if protocol == "openai"
        else ("anthropic/claude-coder", provider.anthropic_base)
    )
    profile = write_profile(
        name="leaky", proposer="llm", model=model, api_base=base, retries=1, backoff_s=0.01,
        timeout_s=20, stream=protocol == "openai", max_tokens=2000, max_unusable=10,
        max_calls_per_eval=10,
    )  # fmt: skip
    run = _run(tmp_path, profile, "secret")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    # the keys were in play: the provider received them and quoted them back
    sent = "".join(
        v for r in provider.received for k, v in r.headers.items()
        if k.lower() in ("authorization", "x-api-key")
    )  # fmt: skip
    key = SECRETS["OPENAI_API_KEY" if protocol == "openai" else "ANTHROPIC_API_KEY"]
    assert key in sent, list(provider.received[0].headers.items())
    assert len(provider.received) >= 5
    folder = tmp_path / "sessions" / "secret"
    status = subprocess.run(
        [*COCKPIT, "status", str(folder), "--json"], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    from cockpit.store import SessionRecord

    with SessionRecord.open_readonly(folder) as rec:
        verdicts = [e.payload for e in rec.events(kinds=["evaluation_finished"])]
    # the snooping kernel ran (it is not refused by the static scan) and its output is recorded
    assert any("SNOOP self" in str(v.get("log_tail")) for v in verdicts), verdicts

    leaks = _leaks((run.stdout + run.stderr + status.stdout).encode(), "process output")
    files = [p for p in folder.rglob("*")]
    assert any(p.name == "session.db" for p in files)
    for p in files:
        if p.is_file() and not p.is_symlink():
            leaks += _leaks(p.read_bytes(), str(p.relative_to(folder)))
    repo = folder / "repo"
    leaks += _leaks(_git(repo, "log", "-p", "--all", "--format=fuller"), "git log -p --all")
    objects = _git(repo, "cat-file", "--batch-all-objects", "--batch")
    assert GOOD.encode() in objects or b"2 * x" in objects  # the objects were read, decompressed
    leaks += _leaks(objects, "git objects")
    assert not leaks, leaks

    # private to the user: the session folder 0700, nothing inside open to group or others
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    open_to_others = [
        f"{p.relative_to(folder)} {stat.S_IMODE(p.lstat().st_mode):o}"
        for p in [folder, *files]
        if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077
    ]
    assert not open_to_others, open_to_others
    for name in ("session.db", "agent.jsonl"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
