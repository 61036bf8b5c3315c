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

  (e) with `--engine-only`: CPU of the attached cockpit while a real engine runs (`cockpit run
      softmax --detach` on the CPU: the tuner, beam 3, as `cockpit demo` runs it), with no
      dialog open, with each dialog open (since-last-looked, help, details, fork, redirect,
      retire, set-model) and with the session paused; `--engine-s` seconds a window (target
      <= 2% of a core); writes `--out`.
  (f) with `--engine-compare OTHER`: two cockpits attached to one real engine at once, this
      checkout's and the one at OTHER (a version to compare with, e.g. the main branch's
      worktree), each one's CPU and terminal output over the same windows (`--engine-rounds`
      windows with no dialog, then half as many paused); writes `--out`.

Usage: .venv/bin/python bench/bench_tui.py [--idle-s 20] [--candidates 10000] [--events 100000]
       .venv/bin/python bench/bench_tui.py --engine-only --engine-s 10 --out FILE
       .venv/bin/python bench/bench_tui.py --engine-compare ../main --engine-s 10 --out FILE
Prints a table and writes bench/results/tui.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import pty
import random
import re
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

    def __init__(self, folder: Path, tmp: Path, repo: Path = REPO) -> None:
        """`repo`: the checkout whose cockpit runs (another one's, to compare two versions)."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env |= {"TERM": "xterm-256color", "COCKPIT_KEYMAP": str(tmp / "none.toml")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH")) if p)
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cockpit.tui", "attach", str(folder)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=repo,
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


# The dialogs of the attached cockpit: (name, key, text drawn once it is open). The
# since-last-looked dialog opens by itself on attach.
DIALOGS = (
    ("help", b"?", b"remap:"),
    ("details", b"\r", b"parent "),
    ("fork", b"f", b"ctrl+s fork"),
    ("redirect", b"r", b"ctrl+s send"),
    ("retire", b"x", b"enter retire"),
    ("set_model", b"m", b"enter switch"),
)
COCKPIT = (sys.executable, "-c", "import sys; from cockpit.cli import main; sys.exit(main())")


def _engine_procs(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _cpu_of(procs: list[psutil.Process]) -> dict[int, float]:
    """CPU seconds of each process still alive, by pid."""
    out = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            continue
    return out


def _cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings by the processes alive at both (an arena that
    ended in between takes its seconds with it; one started in between is not counted)."""
    return sum(after[p] - before[p] for p in before.keys() & after.keys())


@contextlib.contextmanager
def running_engine(tmp: Path, task: str):
    """`cockpit run TASK --detach` on the CPU, once its first verdicts are in (the beam has
    candidates to open): yields (engine pid, session folder, run options); killed after."""
    sessions = tmp / "engine-sessions"
    env = dict(os.environ, COCKPIT_SESSIONS_DIR=str(sessions))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    # the tuner on the CPU as `cockpit demo` runs it, with a plateau window it will not reach:
    # no branch retires while the windows are measured
    opts = ("--device", "cpu", "--mode", "quick", "--budget", "500", "--beam", "3")
    opts += ("--plateau", "1000")
    r = subprocess.run(
        [*COCKPIT, "run", task, "--session", "live", "--detach", *opts],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    m = re.search(r"pid (\d+)", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"cockpit run failed: {r.stdout}{r.stderr}")
    pid = int(m.group(1))
    folder = sessions / "live"
    try:
        deadline = time.monotonic() + 300
        while True:  # the engine's first verdicts, so the beam has candidates to open
            with SessionRecord.open_readonly(folder) as rec:
                n = sum(
                    1 for c in rec.candidates() if c.status not in (None, "proposed", "evaluating")
                )
            if n >= 2 or time.monotonic() > deadline:
                break
            time.sleep(1)
        yield pid, folder, opts
    finally:
        procs = _engine_procs(pid)
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        psutil.wait_procs(procs, timeout=15)


def bench_engine_attached(tmp: Path, seconds: float, out: dict, task: str = "softmax") -> None:
    """A real engine on the CPU and the cockpit attached to it: the cockpit's CPU with no
    dialog open, with each dialog open, and with the session paused (`P`). The engine's own CPU
    (its processes and arenas) is recorded beside each window, for context."""
    with running_engine(tmp, task) as (pid, folder, opts):
        cockpit = PtyCockpit(folder, tmp)
        windows: dict = {}
        try:
            cockpit.wait_for(b"evals")

            def window(name: str) -> None:
                procs = _engine_procs(pid)
                e0, t0 = _cpu_of(procs), time.perf_counter()
                with SessionRecord.open_readonly(folder) as rec:
                    ev0 = rec.last_event_id()
                w = cockpit.measure(seconds)
                with SessionRecord.open_readonly(folder) as rec:
                    w["events_per_s"] = (rec.last_event_id() - ev0) / w["seconds"]
                spent = _cpu_between(e0, _cpu_of(procs))
                w["engine_cpu_pct"] = 100 * spent / (time.perf_counter() - t0)
                windows[name] = w

            try:
                cockpit.wait_for(b"enter or escape to continue", timeout=5)
                time.sleep(1)
                window("since_last_looked")
                cockpit.keys(b"\x1b")
            except RuntimeError:
                windows["since_last_looked"] = {"skipped": "the dialog did not open on attach"}
            time.sleep(2)
            window("running")
            for name, key, marker in DIALOGS:
                cockpit.keys(key)
                try:
                    cockpit.wait_for(marker, timeout=10)
                except RuntimeError:
                    windows[name] = {"skipped": f"{marker!r} not drawn after {key!r}"}
                    cockpit.keys(b"\x1b")
                    time.sleep(1)
                    continue
                time.sleep(1)
                window(name)
                cockpit.keys(b"\x1b")
                time.sleep(1.5)
            cockpit.keys(b"P")  # pause the whole session
            time.sleep(3)
            window("paused")
            cockpit.keys(b"P")
        finally:
            cockpit.close()
        out["engine"] = {
            "task": task,
            "options": list(opts),
            "window_s": seconds,
            "windows": windows,
        }


def bench_engine_compare(
    tmp: Path, seconds: float, rounds: int, other: Path, out: dict, task: str = "softmax"
) -> None:
    """Two cockpits attached to one real engine at once, this checkout's and `other`'s (a
    version to compare with): the CPU and terminal output of each over the same windows, so
    both see the same events under the same load. `rounds` windows with no dialog open, then
    half as many with the session paused."""
    with running_engine(tmp, task) as (pid, folder, opts):
        cockpits = {"this": PtyCockpit(folder, tmp), "other": PtyCockpit(folder, tmp, other)}
        windows: list[dict] = []
        try:
            for cockpit in cockpits.values():
                cockpit.wait_for(b"evals")
            time.sleep(3)
            for cockpit in cockpits.values():
                cockpit.keys(b"\x1b")  # the since-last-looked summary, where it opened
            time.sleep(3)
            procs = {k: psutil.Process(c.proc.pid) for k, c in cockpits.items()}

            def window(name: str) -> None:
                with SessionRecord.open_readonly(folder) as rec:
                    ev0 = rec.last_event_id()
                c0, t0 = _cpu_of(list(procs.values())), time.perf_counter()
                b0 = {k: c.bytes for k, c in cockpits.items()}
                time.sleep(seconds)
                c1, t1 = _cpu_of(list(procs.values())), time.perf_counter()
                w: dict = {"window": name, "seconds": t1 - t0}
                for k, c in cockpits.items():
                    pid_k = procs[k].pid
                    w[k] = {
                        "cpu_pct": 100 * (c1[pid_k] - c0[pid_k]) / (t1 - t0),
                        "bytes_per_s": (c.bytes - b0[k]) / (t1 - t0),
                    }
                with SessionRecord.open_readonly(folder) as rec:
                    w["events_per_s"] = (rec.last_event_id() - ev0) / (t1 - t0)
                w["load_1min"] = os.getloadavg()[0]
                windows.append(w)

            for _ in range(rounds):
                window("running")
            cockpits["this"].keys(b"P")
            time.sleep(6)  # the pause acknowledged and its toasts gone
            for _ in range(max(1, rounds // 2)):
                window("paused")
            cockpits["this"].keys(b"P")
        finally:
            for cockpit in cockpits.values():
                cockpit.close()
    summary: dict = {}
    for name in ("running", "paused"):
        ws = [w for w in windows if w["window"] == name]
        summary[name] = {
            k: {
                "cpu_pct": sum(w[k]["cpu_pct"] for w in ws) / len(ws),
                "bytes_per_s": sum(w[k]["bytes_per_s"] for w in ws) / len(ws),
            }
            for k in ("this", "other")
        }
    out["compare"] = {
        "task": task,
        "options": list(opts),
        "window_s": seconds,
        "this": str(REPO),
        "other": str(other),
        "windows": windows,
        "mean": summary,
    }


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
    parser.add_argument("--engine-s", type=float, default=0.0, help="(e): seconds a window")
    parser.add_argument("--engine-only", action="store_true", help="only (e)")
    parser.add_argument("--engine-task", default="softmax", help="(e): the task the engine runs")
    parser.add_argument("--engine-compare", type=Path, help="(f): the other checkout's root")
    parser.add_argument("--engine-rounds", type=int, default=6, help="(f): windows running")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.engine_compare:
        engine_compare(args)
        return
    if args.engine_only:
        engine_only(args)
        return
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
    save(out, RESULTS, console)


def engine_only(args: argparse.Namespace) -> None:
    out: dict = {"terminal": f"{SIZE[0]}x{SIZE[1]}"}
    console = Console()
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp_name:
        console.print("a real engine on the CPU, the cockpit attached…")
        bench_engine_attached(Path(tmp_name), args.engine_s or 10.0, out, args.engine_task)
    table = Table(title=f"attached cockpit while an engine runs, {out['terminal']} pty")
    for col in ("window", "cockpit CPU", "engine CPU", "events/s", "terminal KB/s"):
        table.add_column(col)
    for name, w in out["engine"]["windows"].items():
        if "skipped" in w:
            table.add_row(name, w["skipped"], "", "", "")
            continue
        table.add_row(
            name,
            f"{w['cpu_pct']:.1f}% of a core",
            f"{w['engine_cpu_pct']:.0f}%",
            f"{w['events_per_s']:.1f}",
            f"{w['bytes_per_s'] / 1024:.1f}",
        )
    console.print(table)
    save(out, args.out, console)


def save(out: dict, path: Path, console: Console) -> None:
    """The results with the machine and the command that made them, as JSON at `path`."""
    out["machine"] = machine()
    out["command"] = "python bench/bench_tui.py " + " ".join(sys.argv[1:])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {path}")


def engine_compare(args: argparse.Namespace) -> None:
    out: dict = {"terminal": f"{SIZE[0]}x{SIZE[1]}"}
    console = Console()
    other = args.engine_compare.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp_name:
        console.print(f"a real engine on the CPU, this cockpit and {other}'s attached…")
        bench_engine_compare(
            Path(tmp_name), args.engine_s or 10.0, args.engine_rounds, other, out, args.engine_task
        )
    table = Table(title=f"two cockpits attached to one engine, {out['terminal']} pty")
    for col in ("window", "this: CPU", "other: CPU", "this: KB/s", "other: KB/s", "events/s"):
        table.add_column(col)
    for w in out["compare"]["windows"]:
        table.add_row(
            w["window"],
            f"{w['this']['cpu_pct']:.1f}%",
            f"{w['other']['cpu_pct']:.1f}%",
            f"{w['this']['bytes_per_s'] / 1024:.1f}",
            f"{w['other']['bytes_per_s'] / 1024:.1f}",
            f"{w['events_per_s']:.1f}",
        )
    for name, m in out["compare"]["mean"].items():
        table.add_row(
            f"mean {name}",
            f"{m['this']['cpu_pct']:.2f}%",
            f"{m['other']['cpu_pct']:.2f}%",
            f"{m['this']['bytes_per_s'] / 1024:.1f}",
            f"{m['other']['bytes_per_s'] / 1024:.1f}",
            "",
        )
    console.print(table)
    save(out, args.out, console)


if __name__ == "__main__":
    main()
