"""`GpuPanel`: GPU utilization, memory, power, temperature and SM clock, plus host CPU and RAM,
as meters on fixed scales, from the session's telemetry samples (so replay shows them too).

The meters show the engine's host. Where evaluations run on other machines (the ray backend),
each node's samples carry its name, and the panel adds one line per node with its latest reading
(`node_lines`): its GPUs, or that it reports none."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from cockpit.store.models import TelemetrySample
from cockpit.tui.widgets.meter import Meter

# Fixed scales. Power and clock cover current datacenter parts (H200: 700 W, 1980 MHz).
POWER_MAX_W = 1000.0
CLOCK_MAX_MHZ = 2500.0
TEMP_MAX_C = 100.0
GPU_METERS = ("util", "mem", "power", "temp", "clock")


def _pct(used: float | None, total: float | None) -> float | None:
    return None if used is None or not total else 100.0 * used / total


def _num(value: float | None, unit: str, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}{unit}"


STALE_S = 10.0  # a node whose last reading is this much older than the newest: say so


def node_lines(samples: tuple[TelemetrySample, ...]) -> list[str]:
    """One line per node that reported (sorted by name): its latest reading's GPUs (utilization,
    memory, power, temperature), or "no GPU" with its CPU and RAM; a node silent for STALE_S
    while others report says for how long."""
    latest: dict[str, float] = {}
    for s in samples:
        if s.node is not None:
            latest[s.node] = max(latest.get(s.node, s.t), s.t)
    if not latest:
        return []
    newest = max(s.t for s in samples)
    lines = []
    for node in sorted(latest):
        rows = [s for s in samples if s.node == node and s.t == latest[node]]
        gpus = sorted((s for s in rows if s.gpu is not None), key=lambda s: s.gpu or 0)
        if gpus:
            parts = []
            for g in gpus:
                mem = "–" if g.mem_used is None else f"{g.mem_used / 1024:.0f}G"
                parts.append(
                    f"GPU {g.gpu} {_num(g.util, '%')} {mem} {_num(g.power_w, 'W')} "
                    f"{_num(g.temp_c, '°C')}"
                )
            text = " · ".join(parts)
        else:
            r = rows[-1]
            text = f"no GPU · cpu {_num(r.cpu_pct, '%')} ram {_num(r.ram_pct, '%')}"
        line = f"{node}: {text}"
        if newest - latest[node] >= STALE_S:
            line += f" (no reading for {newest - latest[node]:.0f} s)"
        lines.append(line)
    return lines


class GpuPanel(Vertical):
    DEFAULT_CSS = """
    GpuPanel { height: 1fr; }
    GpuPanel > #gpu-status { height: 1; color: $text-muted; }
    GpuPanel > #gpu-nodes { height: auto; }
    GpuPanel.-no-nodes > #gpu-nodes { display: none; }
    GpuPanel.-no-gpu > .gpu-meter { display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "GPU"
        self._samples: tuple[TelemetrySample, ...] = ()
        self._texts: dict[str, str] = {}  # what each Static says now
        self.add_class("-no-nodes")  # until a sample from another node arrives

    def compose(self) -> ComposeResult:
        yield Static("no telemetry yet", id="gpu-status")
        yield Meter("util", 0, 100, id="util").add_class("gpu-meter")
        yield Meter("mem", 0, 100, id="mem").add_class("gpu-meter")
        yield Meter("power", 0, POWER_MAX_W, id="power").add_class("gpu-meter")
        yield Meter("temp", 0, TEMP_MAX_C, id="temp").add_class("gpu-meter")
        yield Meter("sm", 0, CLOCK_MAX_MHZ, id="clock").add_class("gpu-meter")
        yield Meter("cpu", 0, 100, id="cpu")
        yield Meter("ram", 0, 100, id="ram")
        yield Static("", id="gpu-nodes")

    def show(self, samples: tuple[TelemetrySample, ...]) -> None:
        """Draw the samples (oldest first); the latest sample says whether there is a GPU."""
        if samples is self._samples:
            return
        self._samples = samples
        nodes = node_lines(samples)
        self.set_class(not nodes, "-no-nodes")
        self._say("gpu-nodes", "\n".join(nodes))
        samples = tuple(s for s in samples if s.node is None)  # the meters: the engine's host
        if not samples:  # none yet (or none before the replay clock): empty meters, not stale ones
            self._say("gpu-status", "no telemetry yet")
            for meter in self.query(Meter):
                meter.show((), "")
            return
        gpu = samples[-1].gpu
        self.set_class(gpu is None, "-no-gpu")
        rows = [s for s in samples if s.gpu == gpu]
        if gpu is None:
            self._say("gpu-status", "no GPU (host only)")
            title = "no GPU"
        else:
            count = len({s.gpu for s in samples if s.gpu is not None})
            title = f"GPU {gpu}" + (f" (of {count})" if count > 1 else "")
            total = rows[-1].mem_total
            self._say("gpu-status", f"{total / 1024:.0f} GiB" if total else "")
            self._meter("util", [s.util for s in rows], _num(rows[-1].util, "%"))
            mem = [_pct(s.mem_used, s.mem_total) for s in rows]
            used = rows[-1].mem_used
            self._meter("mem", mem, "–" if used is None else f"{used / 1024:.0f}G")
            self._meter("power", [s.power_w for s in rows], _num(rows[-1].power_w, "W"))
            self._meter("temp", [s.temp_c for s in rows], _num(rows[-1].temp_c, "°C"))
            clock = rows[-1].sm_clock_mhz
            self._meter("clock", [s.sm_clock_mhz for s in rows], _num(clock, "M"))
        self._meter("cpu", [s.cpu_pct for s in rows], _num(rows[-1].cpu_pct, "%"))
        self._meter("ram", [s.ram_pct for s in rows], _num(rows[-1].ram_pct, "%"))
        if title != self.border_title:  # setting it repaints the panel, even to the same text
            self.border_title = title

    def _say(self, name: str, text: str) -> None:
        """Update a Static only when its text changes: an update lays the screen out again."""
        if self._texts.get(name) != text:
            self._texts[name] = text
            self.query_one(f"#{name}", Static).update(text)

    def _meter(self, name: str, values: list[float | None], text: str) -> None:
        self.query_one(f"#{name}", Meter).show(tuple(values), text)
