"""Cockpit benchmark: what watching a session costs, and how fast the cockpit opens and replays.

Measures, on synthetic sessions written through the store API (bench_store's generator):
  (a) CPU of an attached cockpit (`python -m cockpit.tui attach`, a real process in a pty) on a
      live session with no new events, over --idle-s seconds (target <= 3% of one core); also
      while only telemetry arrives (1 Hz: an engine that is paused);
  (b) bytes per second the cockpit writes to its terminal: idle, and while events arrive at a
      steady rate (one candidate's five events every 0.5 s, plus telemetry; target <= 50 KB/s);
  (c) time to open a session of 10,000 candidates / 100,000 events and show the first screen:
      as a fresh process (spawn to the newest candidate on screen) and in-process (source load
      + first paint, Textual headless); target <= 1 s;
  (d) replay rate: events per second the replay source delivers into the view model
      (`SessionModel.apply`), in steps of 500 events, as the player delivers them at full speed
      (target >= 5,000 events/s).

Usage: .venv/bin/python bench/bench_tui.py [--idle-s 20] [--candidates 10000] [--events 100000]
Prints a table and writes bench/results/tui.json.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pty
import random
import select
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from bench_store import build, candidate_events, machine  # noqa: E402

from cockpit.store import SessionRecord, create_session  # noqa: E402
from cockpit.store import events as ev  # noqa: E402
from cockpit.store.models import TelemetrySample  # noqa: E402

RESULTS = Path(__file__).with_name("results") / "tui.json"
REPO = Path(__file__).resolve().parents[1]
SIZE = (160, 48)  # columns, rows of the pty
EVENT_PERIOD_S = 0.5  # one candidate (five events) every half second


# --- the cockpit in a pty ----------------------------------------------------------------------


class PtyCockpit:
    """`python -m cockpit.tui attach FOLDER` on a pseudo-terminal; a thread drains the output and
    counts the bytes (what an ssh connection would carry)."""

    def __init__(self, folder: Path, tmp: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env |= {"TERM": "xterm-256color", "COCKPIT_KEYMAP": str(tmp / "none.toml")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cockpit.tui", "attach", str(folder)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=REPO,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.bytes = 0
        self.tail = b""
        self.seen_at: dict[bytes, float] = {}
        self.watch: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while not self._stop:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            now = time.perf_counter()
            with self._lock:
                self.bytes += len(data)
                self.tail = (self.tail + data)[-200_000:]
                for marker in self.watch:
                    if marker not in self.seen_at and marker in self.tail:
                        self.seen_at[marker] = now

    def wait_for(self, marker: bytes, timeout: float = 60.0) -> float:
        """Seconds from spawn until `marker` was drawn."""
        with self._lock:
            self.watch.append(marker)
            if marker in self.tail:
                self.seen_at.setdefault(marker, time.perf_counter())
        deadline = time.monotonic() + timeout
        while marker not in self.seen_at:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"{marker!r} not drawn; last output: {self.tail[-500:]!r}")
            time.sleep(0.01)
        return self.seen_at[marker] - self.t_spawn

    def keys(self, data: bytes) -> None:
        os.write(self.master, data)

    def measure(self, seconds: float, during=None) -> dict:
        """CPU (percent of one core) and bytes/s written over `seconds`; `during(stop_event)`
        runs in a thread meanwhile (a writer of events)."""
        p = psutil.Process(self.proc.pid)
        stop = threading.Event()
        writer = threading.Thread(target=during, args=(stop,), daemon=True) if during else None
        c0, b0, t0 = p.cpu_times(), self.bytes, time.perf_counter()
        if writer:
            writer.start()
        time.sleep(seconds)
        c1, b1, t1 = p.cpu_times(), self.bytes, time.perf_counter()
        stop.set()
        if writer:
            writer.join()
        cpu = (c1.user + c1.system) - (c0.user + c0.system)
        return {
            "seconds": t1 - t0,
            "cpu_pct": 100 * cpu / (t1 - t0),
            "bytes": b1 - b0,
            "bytes_per_s": (b1 - b0) / (t1 - t0),
        }

    def close(self) -> None:
        self.keys(b"q")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stop = True
        self._thread.join(2)
        os.close(self.master)


# --- writers: what an engine appends -----------------------------------------------------------


def telemetry_writer(folder: Path):
    def run(stop: threading.Event) -> None:
        with SessionRecord.open(folder) as rec:
            i = 0
            while not stop.wait(1.0):
                i += 1
                rec.add_telemetry(
                    [
                        TelemetrySample(
                            time.time(), 0, 50 + i % 40, 60_000, 143_771, 400, 60, 1980, 30, 40
                        )
                    ]
                )

    return run


def events_writer(folder: Path, counter: list[int]):
    def run(stop: threading.Event) -> None:
        rng = random.Random(11)
        with SessionRecord.open(folder) as rec:
            n = 1_000_000
            last_tel = 0.0
            while not stop.wait(EVENT_PERIOD_S):
                n += 1
                for kind, payload, b, c in candidate_events(rng, n, "b1", "online", None):
                    rec.append(kind, payload, branch=b, candidate=c)
                    counter[0] += 1
                if n % 4 == 0:
                    rec.append(
                        ev.BEST_CHANGED, {"candidate": f"c{n}", "score_us": 1e6 / n}, "b1", f"c{n}"
                    )
                    counter[0] += 1
                if time.time() - last_tel >= 1:
                    last_tel = time.time()
                    rec.add_telemetry(
                        [TelemetrySample(last_tel, 0, 70, 60_000, 143_771, 500, 65, 1980, 40, 40)]
                    )

    return run


# --- the measures ------------------------------------------------------------------------------


def make_session(root: Path, name: str, candidates: int, events: int) -> Path:
    folder = create_session(name, task="softmax", device="cuda", sessions_dir=root)
    with SessionRecord.open(folder) as rec:
        rec.append(ev.SESSION_STARTED, {"pid": os.getpid(), "host": "bench", "resumed": False})
        rec.append(ev.BUDGET_CHANGED, {"budget": candidates * 2})
        build(rec, candidates, events, {})
    return folder


def bench_attached(folder: Path, tmp: Path, seconds: float, out: dict) -> None:
    cockpit = PtyCockpit(folder, tmp)
    try:
        cockpit.wait_for(b"Since you last looked")
        cockpit.keys(b"\x1b")  # close the summary
        time.sleep(3)  # let the first frames and the toast settle
        out["idle"] = cockpit.measure(seconds)
        out["telemetry_only"] = cockpit.measure(seconds, telemetry_writer(folder))
        counter = [0]
        out["events"] = cockpit.measure(seconds, events_writer(folder, counter))
        out["events"]["events_written"] = counter[0]
        out["events"]["events_per_s"] = counter[0] / out["events"]["seconds"]
    finally:
        cockpit.close()


def bench_open_process(folder: Path, tmp: Path, marker: str, out: dict, runs: int = 3) -> None:
    """Spawn to `marker` on screen (the session bar's evaluation count: drawn once the
    session is loaded)."""
    times = []
    for _ in range(runs):
        (folder / "last_looked.json").unlink(missing_ok=True)
        cockpit = PtyCockpit(folder, tmp)
        try:
            times.append(cockpit.wait_for(marker.encode()))
        finally:
            cockpit.close()
    out["open_process_s"] = sorted(times)[len(times) // 2]
    out["open_process_runs_s"] = times
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import textual.app, cockpit.tui"], cwd=REPO, check=True)
    out["python_textual_import_s"] = time.perf_counter() - t0


def bench_open_in_process(folder: Path, out: dict) -> None:
    from cockpit.tui import CockpitApp, LiveSource
    from cockpit.tui.widgets.beam_panel import BeamPanel

    async def first_screen() -> tuple[float, float]:
        t0 = time.perf_counter()
        source = LiveSource(folder)
        app = CockpitApp(source, poll_interval=None, show_summary=False, user="bench")
        async with app.run_test(size=SIZE) as pilot:
            while not getattr(app.screen, "loaded", False):
                await pilot.pause(0.001)
            await pilot.pause()
            beam = app.screen.query_one(BeamPanel).option_list
            assert beam.option_count > 0
            shown = time.perf_counter() - t0
        t1 = time.perf_counter()
        load = LiveSource(folder)
        snap = load.load()
        load.close()
        assert len(snap.candidates) > 0
        return shown, time.perf_counter() - t1

    out["open_in_process_s"], out["source_load_s"] = asyncio.run(first_screen())


def bench_replay(folder: Path, out: dict, chunk: int = 500) -> None:
    from cockpit.tui.model import SessionModel
    from cockpit.tui.sources import ReplaySource

    source = ReplaySource(folder, speed=10_000)
    model = SessionModel()
    model.apply(source.load())
    delivered, t0 = 0, time.perf_counter()
    while True:
        snap = source.step(chunk)
        if snap is None:
            break
        model.apply(snap)
        delivered = snap.last_event_id
    elapsed = time.perf_counter() - t0
    total = source.progress()[1]
    source.close()
    out["replay_events"] = total
    out["replay_chunk"] = chunk
    out["replay_s"] = elapsed
    out["replay_events_per_s"] = total / elapsed
    out["replay_last_id"] = delivered
    out["replay_candidates_at_end"] = len(model.candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    out: dict = {"terminal": f"{SIZE[0]}x{SIZE[1]}", "idle_s": args.idle_s}
    console = Console()
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp_name:
        tmp = Path(tmp_name)
        console.print("building sessions…")
        small = make_session(tmp, "live", 300, 3_000)
        t0 = time.perf_counter()
        big = make_session(tmp, "big", args.candidates, args.events)
        out["build_big_s"] = time.perf_counter() - t0
        with SessionRecord.open_readonly(big) as rec:
            out["big_events"] = rec.last_event_id()
            out["big_candidates"] = len(rec.candidates())
        console.print("attached cockpit: idle, telemetry only, events arriving…")
        bench_attached(small, tmp, args.idle_s, out)
        console.print("opening the big session…")
        bench_open_process(big, tmp, f"{args.candidates}/{args.candidates * 2} evals", out)
        bench_open_in_process(big, out)
        console.print("replay…")
        bench_replay(big, out)
        coarse: dict = {}
        bench_replay(big, coarse, chunk=5000)
        out["replay_events_per_s_chunk5000"] = coarse["replay_events_per_s"]

    kb = 1024
    rows = [
        (
            "(a) CPU, attached and idle (no new events)",
            f"{out['idle']['cpu_pct']:.2f}% of a core",
            "≤ 3%",
        ),
        (
            "    CPU, telemetry only (1 Hz: engine paused)",
            f"{out['telemetry_only']['cpu_pct']:.2f}% of a core",
            "",
        ),
        (
            f"    CPU, events arriving ({out['events']['events_per_s']:.0f} events/s + telemetry)",
            f"{out['events']['cpu_pct']:.1f}% of a core",
            "",
        ),
        ("(b) terminal output, idle", f"{out['idle']['bytes_per_s'] / kb:.2f} KB/s", "≤ 50 KB/s"),
        (
            "    terminal output, telemetry only",
            f"{out['telemetry_only']['bytes_per_s'] / kb:.2f} KB/s",
            "",
        ),
        (
            "    terminal output, events arriving",
            f"{out['events']['bytes_per_s'] / kb:.1f} KB/s",
            "≤ 50 KB/s",
        ),
        (
            f"(c) open {out['big_candidates']:,} candidates / {out['big_events']:,} events, fresh process",
            f"{out['open_process_s']:.2f} s",
            "≤ 1 s",
        ),
        (
            "    … of which python + textual + cockpit import",
            f"{out['python_textual_import_s']:.2f} s",
            "",
        ),
        (
            "    open in-process (source load + first paint)",
            f"{out['open_in_process_s']:.2f} s",
            "≤ 1 s",
        ),
        ("    … of which the source's first load", f"{out['source_load_s']:.2f} s", ""),
        (
            f"(d) replay into the view model (steps of {out['replay_chunk']})",
            f"{out['replay_events_per_s']:,.0f} events/s",
            "≥ 5,000/s",
        ),
        (
            "    … in steps of 5000",
            f"{out['replay_events_per_s_chunk5000']:,.0f} events/s",
            "",
        ),
    ]
    table = Table(title=f"cockpit, {out['terminal']} pty, {args.idle_s:g} s windows")
    for col in ("measure", "result", "target"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    out["machine"] = machine()
    out["command"] = "python bench/bench_tui.py " + " ".join(sys.argv[1:])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
