"""GPU and host telemetry, sampled once a second into the session record.

NVML (utilization, memory, power, temperature, SM clock) per GPU and psutil (CPU, RAM) for the
host. A machine without a GPU records that fact once and keeps sampling the host, so the cockpit
and a replay can show "no GPU" rather than a gap.

Only the GPUs the session may use are sampled: `CUDA_VISIBLE_DEVICES=1 cockpit run` on a
two-GPU host shows GPU 1, not whatever another job runs on GPU 0. Rows carry the NVML index,
the number `nvidia-smi` prints. CUDA's default device order (fastest first) equals NVML's PCI
order on a host of identical GPUs; with mixed GPUs set `CUDA_DEVICE_ORDER=PCI_BUS_ID` for the
two to agree.

With the ray backend every node of the run samples itself too (`node_sample`, in a small actor on
that node, asked once a second by `RayPool.node_telemetry`): NVML where pynvml loads, else
`nvidia-smi --query-gpu`, else a host-only row that says the node reports no GPU. Those rows
carry `node`; the engine's own host keeps `node` empty.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# What `nvidia-smi` is asked where pynvml is missing; `parse_nvidia_smi` reads its csv output.
NVIDIA_SMI_QUERY = (
    "index,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm"
)
# nvidia-smi's csv header names (the unit in brackets dropped) -> TelemetrySample fields
_SMI_FIELDS = {
    "index": "gpu",
    "utilization.gpu": "util",
    "memory.used": "mem_used",
    "memory.total": "mem_total",
    "power.draw": "power_w",
    "temperature.gpu": "temp_c",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
}


def nvml_indices(visible: str | None, uuids: list[str]) -> list[int]:
    """The NVML indices (of the GPUs whose UUIDs are listed, in NVML order) that
    `CUDA_VISIBLE_DEVICES` (None: unset) lets this process use, in its order. Entries are
    indices or GPU UUIDs (a unique prefix is enough, as for CUDA); like CUDA, an entry that names
    no GPU ends the list ("-1" or "" hide every GPU). A MIG entry, which NVML's whole-GPU
    counters do not describe, gives every GPU."""
    if visible is None:
        return list(range(len(uuids)))
    out: list[int] = []
    for raw in visible.split(","):
        entry = raw.strip()
        if entry.startswith("MIG-"):
            return list(range(len(uuids)))
        if entry.isdigit() and int(entry) < len(uuids):
            idx = int(entry)
        else:
            hits = [i for i, u in enumerate(uuids) if entry and u.startswith(entry)]
            if len(hits) != 1:
                break
            idx = hits[0]
        if idx not in out:
            out.append(idx)
    return out


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """Rows of `nvidia-smi --query-gpu=... --format=csv` (header line, values with units such as
    `45 %`, `1024 MiB`, `250.31 W`, `1980 MHz`) as TelemetrySample fields; a value nvidia-smi
    cannot give (`[N/A]`, `[Not Supported]`) and a column it was not asked stay None."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    reader = csv.reader(lines, skipinitialspace=True)
    header = [h.split(" [", 1)[0].strip() for h in next(reader)]
    out = []
    for values in reader:
        row: dict[str, Any] = {}
        for name, raw in zip(header, values, strict=False):
            key = _SMI_FIELDS.get(name)
            if key is None:
                continue
            number = raw.strip().split(" ", 1)[0]
            try:
                row[key] = int(number) if key == "gpu" else float(number)
            except ValueError:  # [N/A], [Not Supported]
                row[key] = None
        if row.get("gpu") is not None:
            out.append(row)
    return out


def node_sample(gpus: list[int] | None = None) -> list[dict[str, Any]]:
    """One reading of this machine (a Ray node): its GPUs `gpus` (NVML indices; None: all) via
    NVML, else via nvidia-smi, plus host CPU and RAM; one host-only row (`gpu` None) where no
    GPU is reported. Rows carry `source` (nvml, nvidia-smi or none)."""
    import psutil

    now = time.time()
    host = {"t": now, "cpu_pct": psutil.cpu_percent(interval=None)}
    host["ram_pct"] = psutil.virtual_memory().percent
    rows: list[dict[str, Any]] = []
    source = "none"
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        handles = [
            (i, pynvml.nvmlDeviceGetHandleByIndex(i))
            for i in range(count)
            if gpus is None or i in gpus
        ]
        rows = _nvml_rows(handles, host)
        source = "nvml" if rows else source
    except Exception:  # noqa: BLE001 - no library, no driver: nvidia-smi may still answer
        smi = shutil.which("nvidia-smi")
        if smi:
            with contextlib.suppress(Exception):
                proc = subprocess.run(
                    [smi, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                got = parse_nvidia_smi(proc.stdout) if proc.returncode == 0 else []
                rows = [dict(host, **r) for r in got if gpus is None or r["gpu"] in gpus]
                source = "nvidia-smi" if got else source
    if not rows:
        rows = [dict(host, gpu=None)]
    for r in rows:
        r.update(host, source=source)
    return rows


class TelemetrySampler:
    def __init__(
        self,
        session_dir: Path,
        interval_s: float = 1.0,
        nodes: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        """`nodes`: where evaluations run on other machines (the ray backend), their rows of
        each reading, `node` set (see `RayPool.node_telemetry`)."""
        self.session_dir = session_dir
        self.interval_s = interval_s
        self.nodes = nodes
        self._nodes_seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self.gpus: list[Any] = []
        self.has_gpu = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():  # never started when the engine failed before its loop
            self._thread.join(timeout=5)

    def _init_nvml(self) -> str:
        try:
            import pynvml

            pynvml.nvmlInit()
            handles = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
            uuids = [_text(pynvml.nvmlDeviceGetUUID(h)) for h in handles]
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            self.gpus = [(i, handles[i]) for i in nvml_indices(visible, uuids)]
            self.has_gpu = bool(self.gpus)
            if not self.gpus:
                return "no GPU" if not handles else f"no GPU (CUDA_VISIBLE_DEVICES={visible!r})"
            which = ", ".join(str(i) for i, _ in self.gpus)
            return f"GPU {which} of {len(handles)} via NVML"
        except Exception as exc:  # noqa: BLE001 - no driver or no library
            return f"no GPU ({type(exc).__name__})"

    def sample(self) -> list[dict[str, Any]]:
        import psutil

        now = time.time()
        cpu = psutil.cpu_percent(interval=None)
        ram = psutil.virtual_memory().percent
        if not self.gpus:
            return [{"t": now, "gpu": None, "cpu_pct": cpu, "ram_pct": ram}]
        return _nvml_rows(self.gpus, {"t": now, "cpu_pct": cpu, "ram_pct": ram})

    def _run(self) -> None:
        from cockpit.store import SessionRecord, events

        note = self._init_nvml()
        with SessionRecord.open(self.session_dir) as record:
            record.append(events.NOTE, {"text": f"telemetry: {note}", "has_gpu": self.has_gpu})
            while not self._stop.is_set():
                with contextlib.suppress(Exception):  # telemetry must never stop the engine
                    record.add_telemetry(self.sample())
                if self.nodes is not None:
                    with contextlib.suppress(Exception):
                        rows = self.nodes()
                        record.add_telemetry(rows)
                        self._note_nodes(record, rows)
                self._stop.wait(self.interval_s)

    def _note_nodes(self, record: Any, rows: list[dict[str, Any]]) -> None:
        """A node's first reading: a note saying what it reports, as for this host."""
        from cockpit.store import events

        for node in sorted({r["node"] for r in rows} - self._nodes_seen):
            mine = [r for r in rows if r["node"] == node]
            gpus = [str(r["gpu"]) for r in mine if r.get("gpu") is not None]
            source = mine[0].get("source") or "nvml"
            what = f"GPU {', '.join(gpus)} via {source}" if gpus else "no GPU"
            record.append(
                events.NOTE, {"text": f"telemetry: node {node}: {what}", "has_gpu": bool(gpus)}
            )
            self._nodes_seen.add(node)


def _nvml_rows(gpus: list[tuple[int, Any]], host: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (NVML index, handle), the `host` fields (t, cpu_pct, ram_pct) in each."""
    import pynvml

    out = []
    for i, h in gpus:
        row: dict[str, Any] = dict(host, gpu=i)
        try:
            row["util"] = float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            row["mem_used"], row["mem_total"] = mem.used / 2**20, mem.total / 2**20
            row["power_w"] = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
            row["temp_c"] = float(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU))
            row["sm_clock_mhz"] = float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001 - a counter that is not supported stays empty
            pass
        out.append(row)
    return out


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
