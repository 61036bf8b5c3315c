"""GPU and host telemetry, sampled once a second into the session record.

NVML (utilization, memory, power, temperature, SM clock) per GPU and psutil (CPU, RAM) for the
host. A machine without a GPU records that fact once and keeps sampling the host, so the cockpit
and a replay can show "no GPU" rather than a gap.

Only the GPUs the session may use are sampled: `CUDA_VISIBLE_DEVICES=1 cockpit run` on a
two-GPU host shows GPU 1, not whatever runs on GPU 0 (session 7's H200 record sampled both, and
the cockpit showed the last one, right only by chance). Rows carry the NVML index, the number
`nvidia-smi` prints. CUDA's default device order (fastest first) equals NVML's PCI order on a
host of identical GPUs; with mixed GPUs set `CUDA_DEVICE_ORDER=PCI_BUS_ID` for the two to agree.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any


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


class TelemetrySampler:
    def __init__(self, session_dir: Path, interval_s: float = 1.0) -> None:
        self.session_dir = session_dir
        self.interval_s = interval_s
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
        import pynvml

        out = []
        for i, h in self.gpus:
            row: dict[str, Any] = {"t": now, "gpu": i, "cpu_pct": cpu, "ram_pct": ram}
            try:
                row["util"] = float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
                mem = pynvml.nvmlDeviceGetMemoryInfo(h)
                row["mem_used"], row["mem_total"] = mem.used / 2**20, mem.total / 2**20
                row["power_w"] = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
                row["temp_c"] = float(
                    pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
                )
                row["sm_clock_mhz"] = float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
            except Exception:  # noqa: BLE001 - a counter that is not supported stays empty
                pass
            out.append(row)
        return out

    def _run(self) -> None:
        from cockpit.store import SessionRecord, events

        note = self._init_nvml()
        with SessionRecord.open(self.session_dir) as record:
            record.append(events.NOTE, {"text": f"telemetry: {note}", "has_gpu": self.has_gpu})
            while not self._stop.is_set():
                with contextlib.suppress(Exception):  # telemetry must never stop the engine
                    record.add_telemetry(self.sample())
                self._stop.wait(self.interval_s)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
