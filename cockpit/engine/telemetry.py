"""GPU and host telemetry, sampled once a second into the session record.

NVML (utilization, memory, power, temperature, SM clock) per GPU and psutil (CPU, RAM) for the
host. A machine without a GPU records that fact once and keeps sampling the host, so the cockpit
and a replay can show "no GPU" rather than a gap.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any


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
            self.gpus = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.has_gpu = bool(self.gpus)
            return f"{len(self.gpus)} GPU(s) via NVML" if self.gpus else "no GPU"
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
        for i, h in enumerate(self.gpus):
            row: dict[str, Any] = {"t": now, "gpu": i, "cpu_pct": cpu, "ram_pct": ram}
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

    def _run(self) -> None:
        from cockpit.store import SessionRecord, events

        note = self._init_nvml()
        with SessionRecord.open(self.session_dir) as record:
            record.append(events.NOTE, {"text": f"telemetry: {note}", "has_gpu": self.has_gpu})
            while not self._stop.is_set():
                with contextlib.suppress(Exception):  # telemetry must never stop the engine
                    record.add_telemetry(self.sample())
                self._stop.wait(self.interval_s)
