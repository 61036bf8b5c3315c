"""Sample the GPU's clocks, power, temperature, throttle reasons and other processes while a
measurement runs, so an outlier can be explained (a slow process: lower clocks? a neighbour?).

    with GpuWatch(index=0) as w:
        run_something()
    w.stats()  # {"sm_mhz": {"min":..,"median":..,"max":..}, "throttle": [...], "others": n, ...}

NVML only (nvidia-ml-py); without it, or without a GPU, stats() says why and nothing fails.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time

# nvmlDeviceGetCurrentClocksEventReasons bits (nvml.h), named as nvidia-smi names them
_REASONS = {
    0x1: "gpu_idle",
    0x2: "app_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clocks",
}


def _index() -> int:
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(vis) if vis.isdigit() else 0


class GpuWatch:
    def __init__(self, index: int | None = None, period_s: float = 0.25) -> None:
        self.index = _index() if index is None else index
        self.period_s = period_s
        self.samples: list[dict] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GpuWatch:
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._h = pynvml.nvmlDeviceGetHandleByIndex(self.index)
        except Exception as exc:  # no NVML, no GPU: record why, measure anyway
            self.error = f"{type(exc).__name__}: {exc}"
            return self
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _sample(self) -> dict:
        n, h = self._nvml, self._h
        s = {"t": time.monotonic()}
        for key, fn in (
            ("sm_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            ("mem_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
            ("power_w", lambda: n.nvmlDeviceGetPowerUsage(h) / 1000),
            ("temp_c", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
            ("util_pct", lambda: n.nvmlDeviceGetUtilizationRates(h).gpu),
            ("reasons", lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h)),
            ("procs", lambda: len(n.nvmlDeviceGetComputeRunningProcesses(h))),
        ):
            with contextlib.suppress(Exception):  # a counter missing on this driver: keep the rest
                s[key] = fn()
        return s

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._sample())
            self._stop.wait(self.period_s)

    def stats(self) -> dict:
        if self.error:
            return {"error": self.error}
        out: dict = {"samples": len(self.samples)}
        for key in ("sm_mhz", "mem_mhz", "power_w", "temp_c", "util_pct", "procs"):
            vals = [s[key] for s in self.samples if key in s]
            if vals:
                out[key] = {
                    "min": min(vals),
                    "median": statistics.median(vals),
                    "max": max(vals),
                }
        seen = 0
        for s in self.samples:
            seen |= s.get("reasons", 0)
        out["throttle"] = [name for bit, name in _REASONS.items() if seen & bit]
        return out

    def line(self) -> str:
        st = self.stats()
        if "error" in st:
            return f"gpu watch: {st['error']}"
        sm = st.get("sm_mhz", {})
        return (
            f"sm {sm.get('min')}-{sm.get('max')} MHz (median {sm.get('median')}), "
            f"power max {st.get('power_w', {}).get('max')} W, "
            f"temp max {st.get('temp_c', {}).get('max')} C, "
            f"procs max {st.get('procs', {}).get('max')}, throttle {','.join(st['throttle']) or '-'}"
        )
