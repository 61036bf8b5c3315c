"""The judge's end of the link to a candidate's process: spawn, request/reply, limits.

The candidate runs in a *spawned* interpreter (never a fork of a process that touched CUDA) with
a scrubbed environment and its own working directory. Replies are JSON read with a size cap; a
reply out of sequence, or bytes nobody asked for, are an integrity failure; a process that dies,
hangs past the deadline or grows past the memory limit becomes a verdict, not an engine error.

The candidate's stdout and stderr go through a pipe that a thread of the judge drains without
pause, keeping the first and last 64 KiB and counting the rest (`Output`): whatever the candidate
prints, the judge's memory and disk stay bounded, and a write never blocks long enough to look
like a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from cockpit.harness import sandbox
from cockpit.harness.protocol import ArenaConfig, Reply, Request

MAX_REPLY = 64 << 20
OUTPUT_KEEP = 64 << 10  # bytes of the candidate's output kept at each end


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether `fd` has bytes (or its end of file) within `timeout_s`; poll(2), so any fd
    number works (select(2) stops at 1024)."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    return bool(p.poll(timeout_s * 1000))


class Output:
    """The candidate's stdout and stderr, read from a pipe by a daemon thread: the first and the
    last `keep` bytes are kept, the bytes between them only counted (`dropped`). The thread reads
    until every writer has closed the pipe, or until `stop()` (a process that escaped the kill
    may hold it open forever)."""

    def __init__(self, keep: int = OUTPUT_KEEP) -> None:
        self.keep = keep
        self.read_fd, self.write_fd = os.pipe()
        try:  # a larger pipe: fewer wake-ups while a candidate floods it
            import fcntl

            fcntl.fcntl(self.write_fd, 1031, 1 << 20)  # F_SETPIPE_SZ
        except (ImportError, OSError):
            pass
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="arena-output", daemon=True)

    def start(self) -> None:
        """Begin draining; the caller has handed `write_fd` to the child and closes it here."""
        os.close(self.write_fd)
        self.write_fd = -1
        self._thread.start()

    def _drain(self) -> None:
        try:
            while not self._stop.is_set():
                if not _readable(self.read_fd, 0.2):
                    continue
                data = os.read(self.read_fd, 1 << 16)
                if not data:
                    return
                with self._lock:
                    self.total += len(data)
                    room = self.keep - len(self.head)
                    if room > 0:
                        self.head += data[:room]
                        data = data[room:]
                    if data:
                        self.tail += data
                        if len(self.tail) > 2 * self.keep:
                            del self.tail[: -self.keep]
        finally:
            os.close(self.read_fd)

    @property
    def dropped(self) -> int:
        """Bytes neither in the head nor in the tail."""
        with self._lock:
            return max(0, self.total - len(self.head) - min(len(self.tail), self.keep))

    def settle(self, timeout: float) -> None:
        """Wait (up to `timeout`) for the pipe's end of file, so the tail holds the last words of
        a process that has exited."""
        self._thread.join(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1.0)

    def last(self, n: int) -> bytes:
        """The last `n` bytes kept (the tail, or the head while nothing was dropped)."""
        with self._lock:
            if self.total <= 2 * self.keep:
                both = bytes(self.head) + bytes(self.tail)
            else:
                both = bytes(self.tail[-self.keep :])
            return both[-n:]


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
        self.extend: Callable[[], float | None] | None = None  # the open request's (`request`)
        parent, child = socket.socketpair()
        self.conn = Connection(os.dup(parent.fileno()))
        parent.close()
        env = sandbox.scrubbed_env(workdir, cache_dir, device)
        # the arena imports cockpit from wherever the judge did
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in [pkg_root, env.get("PYTHONPATH", "")] if p)
        self.output = Output()
        try:
            self.proc = self._spawn(child, env, workdir, pass_fds)
        except BaseException:
            os.close(self.output.write_fd)
            os.close(self.output.read_fd)
            raise
        self.output.start()
        child.close()
        self.memory_bytes = memory_bytes
        self.seq = 0
        self.peak_rss = 0
        self.late_bytes = False  # bytes were waiting on the result channel when it was closed

    def _spawn(
        self, child: socket.socket, env: dict[str, str], workdir: Path, pass_fds: tuple[int, ...]
    ) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "cockpit.harness.arena", "--fd", str(child.fileno())],
            pass_fds=[child.fileno(), *pass_fds],  # the socket, and the exchange regions
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=self.output.write_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log_tail(self, n: int = 1500) -> str:
        """The last `n` bytes of the candidate's output (after the process has exited: all of
        it that arrived within a second)."""
        if self.proc.poll() is not None:
            self.output.settle(1.0)
        return self.output.last(n).decode("utf-8", "replace")

    @property
    def output_dropped(self) -> int:
        """Bytes of the candidate's output that were counted but not kept."""
        return self.output.dropped

    def _rss(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def send(self, msg: Request | ArenaConfig) -> None:
        self.conn.send_bytes(json.dumps(msg).encode())

    def recv(self, deadline: float) -> Reply:
        """The next reply: a length-prefixed JSON object (multiprocessing's framing), read with
        the deadline, liveness and memory checks running between chunks, so a partial, endless
        or oversized message is a verdict and never a judge blocked in a read. Only its being an
        object is checked here: the fields of a `protocol.Reply` are the caller's to read."""
        (size,) = struct.unpack("!i", self._read(4, deadline, start=True))
        if size == -1:
            (size,) = struct.unpack("!Q", self._read(8, deadline))
        if not 0 <= size <= MAX_REPLY:
            raise ProtocolViolation(
                f"a reply of {size} bytes arrived on the result channel "
                f"(the limit is {MAX_REPLY >> 20} MiB)"
            )
        raw = self._read(size, deadline)
        try:
            reply = json.loads(raw)
        except ValueError:
            raise ProtocolViolation("unreadable bytes on the result channel") from None
        if not isinstance(reply, dict):
            raise ProtocolViolation(
                "a reply that is not a JSON object arrived on the result channel"
            )
        return reply

    def _read(self, n: int, deadline: float, start: bool = False) -> bytes:
        """Exactly `n` bytes of the result channel. `start`: the first bytes of a message, where
        a process that ended is a death rather than a broken message."""
        fd = self.conn.fileno()
        buf = bytearray()
        while len(buf) < n:
            if _readable(fd, 0.05):
                try:
                    chunk = os.read(fd, min(n - len(buf), 1 << 20))
                except OSError:
                    chunk = b""
                if chunk:
                    buf += chunk
                    continue
                # end of file: the arena's end of the socket is closed
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    raise ProtocolViolation(
                        "the result channel was closed while the process kept running"
                    ) from None
                if start and not buf:
                    raise ArenaDied(self.proc.returncode, self.log_tail())
                raise ProtocolViolation(
                    f"the process exited (code {self.proc.returncode}) in the middle of a reply"
                )
            rc = self.proc.poll()
            if rc is not None:
                if _readable(fd, 0):
                    continue
                if start and not buf:
                    raise ArenaDied(rc, self.log_tail())
                raise ProtocolViolation(f"the process exited (code {rc}) in the middle of a reply")
            if time.monotonic() > deadline:
                later = self.extend() if self.extend is not None else None
                if later is None or time.monotonic() > later:
                    raise ArenaTimeout()
                deadline = later
            if self.memory_bytes:
                rss = self._rss()
                self.peak_rss = max(self.peak_rss, rss)
                if rss > self.memory_bytes:
                    raise ArenaOOM(rss)
        return bytes(buf)

    def request(
        self,
        msg: Request,
        deadline: float,
        extend: Callable[[], float | None] | None = None,
    ) -> Reply:
        """Send `msg` and read its reply by `deadline`; past it, `extend` (if given) may name a
        later deadline (a compile started in the call) or None (the call is over its time)."""
        self.seq += 1
        msg = dict(msg, seq=self.seq)
        self.send(msg)
        self.extend = extend
        try:
            reply = self.recv(deadline)
        finally:
            self.extend = None
        if reply.get("seq") != self.seq:
            raise ProtocolViolation(
                f"a reply out of sequence arrived on the result channel (seq {reply.get('seq')!r})"
            )
        # Readable right after a reply: more bytes, or the end of the stream. An arena ends
        # itself after replying to a CUDA error (its context is unusable): that reply is the
        # verdict, and the closed socket is not a message. One byte tells them apart, without
        # reading a message whose length the candidate chose.
        if self.conn.poll(0) and self.unread_bytes():
            raise ProtocolViolation("unsolicited bytes arrived on the result channel")
        return reply

    def goodbye(self, timeout: float = 2.0) -> bool:
        """Tell the arena its work is over and wait (up to `timeout`) for it to say so: it
        answers `bye` once the request it may still be working on is done. Returns whether
        anything else arrived first (a genuine reply landing after a forged one was taken).
        The process is not waited for: the caller kills it."""
        if self.proc.poll() is not None:
            return False
        try:
            self.send({"op": "bye"})
        except OSError:
            return False
        deadline = time.monotonic() + timeout
        late = False
        while time.monotonic() < deadline:
            try:
                msg = self.recv(deadline)
            except (ArenaDied, ArenaTimeout, ArenaOOM, ProtocolViolation):
                return late
            if msg.get("bye") is True and set(msg) == {"bye"}:
                return late
            late = True
        return late

    def unread_bytes(self) -> bool:
        """Whether a byte is waiting on the result channel (consumed): False for nothing, or for
        only the end of the stream (after `kill` the process can write nothing more)."""
        try:
            os.set_blocking(self.conn.fileno(), False)
            return bool(os.read(self.conn.fileno(), 1))
        except OSError:
            return False

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
            # and whatever the candidate started in the group (a forked child outlives an
            # arena that exited by itself)
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            # the process group is gone: whatever it wrote is readable now (a readable socket
            # that reads nothing is only the end of file)
            with contextlib.suppress(OSError):
                os.set_blocking(self.conn.fileno(), False)
                self.late_bytes = bool(os.read(self.conn.fileno(), 1))
            self.conn.close()
            self.output.settle(1.0)
            self.output.stop()
