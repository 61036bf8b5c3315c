"""The judge survives whatever a candidate writes: a flood on stdout/stderr, and huge, broken,
endless or late messages on the result channel. Each is a real candidate judged in a real arena
process; the flood also goes through the `cockpit eval` command line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_helpers import ROOT, UNUSUAL, describe, run_judge

FLOOD = UNUSUAL / "softmax_output_flood.py"
TRUNCATED = re.compile(r"^output truncated: (\d+) bytes")


def _cli_eval(path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, int]:
    """`cockpit eval softmax PATH --device cpu --json --quick` in a child process, and the
    child's peak resident memory (VmHWM, polled while it runs)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cockpit.cli",
            "eval",
            "softmax",
            str(path),
            "--device",
            "cpu",
            "--json",
            "--quick",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peak = 0
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), peak


def _variant(tmp_path: Path, flood_mb: int, name: str) -> Path:
    src, n = re.subn(r"^FLOOD_MB = \d+", f"FLOOD_MB = {flood_mb}", FLOOD.read_text(), flags=re.M)
    assert n == 1
    path = tmp_path / name
    path.write_text(src)
    return path


def test_a_flooding_candidate_is_judged_ok_with_its_output_truncated_and_the_judge_bounded(
    tmp_path,
):
    quiet = tmp_path / "quiet.py"
    quiet.write_text("import torch\n\n\ndef kernel(x):\n    return torch.softmax(x, dim=-1)\n")
    base, base_peak = _cli_eval(quiet, tmp_path)
    assert base.returncode == 0, base.stderr.decode()[-2000:]

    flood = _variant(tmp_path, 400, "flood.py")  # 400 MiB at import, 256 KiB a call
    r, peak = _cli_eval(flood, tmp_path)
    assert r.returncode == 0, (r.returncode, r.stderr.decode()[-2000:])
    verdict = json.loads(r.stdout)
    assert verdict["status"] == "ok", verdict["reasons"]
    flags = [m for f in verdict["flags"] if (m := TRUNCATED.match(f))]
    assert len(flags) == 1, verdict["flags"]
    assert int(flags[0].group(1)) > 400 << 20  # counted, not kept
    assert verdict["log_tail"].rstrip().endswith("call") or "call call" in verdict["log_tail"]
    # the judge held the first and last 64 KiB of half a gigabyte, not the gigabyte
    assert peak - base_peak < 64 << 20, f"judge peak {peak >> 20} MiB vs {base_peak >> 20} MiB"


def test_a_candidate_that_prints_little_keeps_all_of_it_and_no_flag(tmp_path):
    path = _variant(tmp_path, 0, "small.py")
    src = path.read_text().replace('("call " * 13107 + "\\n") * 4', '"one call\\n"')
    path.write_text(src)
    result = run_judge("softmax", path)
    assert result.status == "ok", describe(result)
    assert not [f for f in result.flags if TRUNCATED.match(f)]
    assert "one call" in result.log_tail


# --- the result channel --------------------------------------------------------------------

CHANNEL = """
import os, struct, sys, time
import torch

FD = int(sys.argv[sys.argv.index("--fd") + 1])  # the arena's end of the result channel


def frame(body: bytes) -> bytes:
    return struct.pack("!i", len(body)) + body


def kernel(x):
    y = torch.softmax(x, dim=-1)
{body}
    return y
"""


def _channel_candidate(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "channel.py"
    path.write_text(CHANNEL.format(body="\n".join("    " + ln for ln in body.splitlines())))
    return path


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        # a length past MAX_REPLY, and then the bytes never come
        (
            'os.write(FD, struct.pack("!i", 100 << 20) + b"x" * 4096)',
            r"a reply of 104857600 bytes .*limit is 64 MiB",
        ),
        # the 64-bit form of the length, a terabyte
        ('os.write(FD, struct.pack("!iQ", -1, 1 << 40))', r"a reply of 1099511627776 bytes"),
        ('os.write(FD, frame(b"[1, 2, 3]"))', r"not a JSON object"),
        ('os.write(FD, frame(b"\\xff\\xfe{not json"))', r"unreadable bytes"),
        ("os.write(FD, frame(b'{\"ok\": true}'))", r"out of sequence"),
        # the candidate closes the channel and keeps the process alive
        ("os.close(FD)\ntime.sleep(60)", r"closed while the process kept running"),
    ],
    ids=["over-the-limit", "a-terabyte", "not-an-object", "not-json", "no-seq", "closed"],
)
def test_a_broken_message_on_the_result_channel_is_an_integrity_verdict(tmp_path, body, pattern):
    result = run_judge("softmax", _channel_candidate(tmp_path, body), static=False)
    assert result.status == "rejected", describe(result)
    assert any(r.kind == "integrity" and re.search(pattern, r.message) for r in result.reasons), (
        describe(result)
    )


def test_half_a_message_then_silence_is_a_timeout_not_a_judge_stuck_in_a_read(tmp_path):
    body = 'os.write(FD, struct.pack("!i", 1000) + b"{" * 10)\ntime.sleep(3600)'
    t0 = time.monotonic()
    result = run_judge("softmax", _channel_candidate(tmp_path, body), static=False, time_limit_s=8)
    assert time.monotonic() - t0 < 40
    assert result.status == "timeout", describe(result)


def test_bytes_after_the_last_reply_are_an_integrity_verdict(tmp_path):
    # During the last request (the profile), a forged reply with the right sequence number goes
    # out first; the judge takes it, and the arena's genuine reply lands after the last reply.
    body = (
        "import json\n"
        "f = sys._getframe()\n"
        "while f is not None and f.f_code.co_name != 'serve':\n"
        "    f = f.f_back\n"
        "msg = f.f_locals.get('msg') if f else None\n"
        "if msg and msg.get('op') == 'profile' and not globals().get('SENT'):\n"
        "    globals()['SENT'] = True\n"
        "    os.write(FD, frame(json.dumps({'ok': True, 'seq': msg['seq']}).encode()))"
    )
    result = run_judge("softmax", _channel_candidate(tmp_path, body), static=False)
    assert result.status == "rejected", describe(result)
    assert any(
        r.kind == "integrity" and "after the last reply" in r.message for r in result.reasons
    ), describe(result)


def test_half_a_message_after_the_last_reply_is_an_integrity_verdict_not_a_wait(tmp_path):
    # A forged last reply, then the head of a message that claims 1000 bytes and never sends
    # them: the judge tells bytes after the last reply by one raw byte, never by reading a
    # message whose length the candidate chose, so it answers at once instead of waiting.
    body = (
        "import json\n"
        "f = sys._getframe()\n"
        "while f is not None and f.f_code.co_name != 'serve':\n"
        "    f = f.f_back\n"
        "msg = f.f_locals.get('msg') if f else None\n"
        "if msg and msg.get('op') == 'profile' and not globals().get('SENT'):\n"
        "    globals()['SENT'] = True\n"
        "    os.write(FD, frame(json.dumps({'ok': True, 'seq': msg['seq']}).encode()))\n"
        "    os.write(FD, struct.pack('!i', 1000) + b'{' * 10)"
    )
    t0 = time.monotonic()
    result = run_judge("softmax", _channel_candidate(tmp_path, body), static=False)
    assert time.monotonic() - t0 < 120
    assert result.status == "rejected", describe(result)
    assert any(
        r.kind == "integrity" and re.search("after the last reply|unsolicited bytes", r.message)
        for r in result.reasons
    ), describe(result)


def test_a_clean_candidate_on_the_same_path_is_ok(tmp_path):
    """The control for the channel tests: the same file with nothing written is judged ok."""
    result = run_judge("softmax", _channel_candidate(tmp_path, "pass"), static=False)
    assert result.status == "ok", describe(result)


def test_a_process_the_candidate_forked_does_not_outlive_the_evaluation(tmp_path):
    body = (
        "if not globals().get('CHILD'):\n"
        "    CHILD = globals()['CHILD'] = os.fork()\n"
        "    if CHILD == 0:\n"
        "        time.sleep(120)\n"
        "        os._exit(0)\n"
        "    print(f'CHILD-PID {CHILD}', flush=True)"
    )
    result = run_judge("softmax", _channel_candidate(tmp_path, body), static=False)
    pids = re.findall(r"CHILD-PID (\d+)", result.log_tail) or re.findall(
        r"CHILD-PID (\d+)", describe(result)
    )
    assert pids, describe(result)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pids[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    state = (
        Path(f"/proc/{pids[0]}/stat").read_text().split()[2]
        if Path(f"/proc/{pids[0]}").exists()
        else "gone"
    )
    assert state in ("gone", "Z"), f"the candidate's child {pids[0]} is still running ({state})"
