"""The judge's end of the link to a candidate's process: spawn, request/reply, limits.

The candidate runs in a *spawned* interpreter (never a fork of a process that touched CUDA) with
a scrubbed environment and its own working directory. Replies are JSON read with a size cap; a
reply out of sequence, or bytes nobody asked for, are an integrity failure; a process that dies,
hangs past the deadline or grows past the memory limit becomes a verdict, not an engine error.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from cockpit.harness import sandbox

MAX_REPLY = 64 << 20


class ArenaDied(Exception):
    def __init__(self, returncode: int, log_tail: str) -> None:
        super().__init__(f"exit {returncode}")
        self.returncode, self.log_tail = returncode, log_tail


class ArenaTimeout(Exception):
    pass


class ArenaOOM(Exception):
    def __init__(self, rss: int) -> None:
        super().__init__(f"rss {rss}")
        self.rss = rss


class ProtocolViolation(Exception):
    pass


class Channel:
    def __init__(
        self,
        workdir: Path,
        cache_dir: Path,
        device: str,
        memory_bytes: int | None,
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        self.workdir = workdir
        self.log_path = workdir / "arena.log"
        parent, child = socket.socketpair()
        self.conn = Connection(os.dup(parent.fileno()))
        parent.close()
        env = sandbox.scrubbed_env(workdir, cache_dir, device)
        # the arena imports cockpit from wherever the judge did
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in [pkg_root, env.get("PYTHONPATH", "")] if p)
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cockpit.harness.arena", "--fd", str(child.fileno())],
            pass_fds=[child.fileno(), *pass_fds],  # the socket, and the exchange regions
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        child.close()
        self.memory_bytes = memory_bytes
        self.seq = 0
        self.peak_rss = 0

    def log_tail(self, n: int = 1500) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-n:].decode("utf-8", "replace")

    def _rss(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def send(self, msg: dict[str, Any]) -> None:
        self.conn.send_bytes(json.dumps(msg).encode())

    def recv(self, deadline: float) -> dict[str, Any]:
        while True:
            if self.conn.poll(0.05):
                try:
                    raw = self.conn.recv_bytes(MAX_REPLY)
                except (EOFError, OSError):
                    self.proc.wait(5)
                    raise ArenaDied(self.proc.returncode, self.log_tail()) from None
                try:
                    return json.loads(raw)
                except ValueError:
                    raise ProtocolViolation("unreadable bytes on the result channel") from None
            rc = self.proc.poll()
            if rc is not None:
                if self.conn.poll(0):
                    continue
                raise ArenaDied(rc, self.log_tail())
            if time.monotonic() > deadline:
                raise ArenaTimeout()
            if self.memory_bytes:
                rss = self._rss()
                self.peak_rss = max(self.peak_rss, rss)
                if rss > self.memory_bytes:
                    raise ArenaOOM(rss)

    def request(self, msg: dict[str, Any], deadline: float) -> dict[str, Any]:
        self.seq += 1
        msg = dict(msg, seq=self.seq)
        self.send(msg)
        reply = self.recv(deadline)
        if reply.get("seq") != self.seq:
            raise ProtocolViolation(
                f"a reply out of sequence arrived on the result channel (seq {reply.get('seq')!r})"
            )
        if self.conn.poll(0):
            # Readable right after a reply: more bytes, or the end of the stream. An arena ends
            # itself after replying to a CUDA error (its context is unusable): that reply is the
            # verdict, and the closed socket is not a message.
            try:
                self.conn.recv_bytes(MAX_REPLY)
            except EOFError:
                return reply
            except OSError:
                pass
            raise ProtocolViolation("unsolicited bytes arrived on the result channel")
        return reply

    def kill(self) -> None:
        """End the process group now (the verdict is in: nothing it does matters any more)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send({"op": "bye"})
                    self.proc.wait(2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
        finally:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    self.proc.kill()
                self.proc.wait()
            self.conn.close()
            self.log.close()
