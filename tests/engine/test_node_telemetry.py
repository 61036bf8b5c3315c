"""Per-node telemetry: a node's `nvidia-smi --query-gpu` output read into samples (the path taken
where pynvml is missing), a node without any GPU reporting so, and the GPU panel's line per node.
The nodes of a real Ray run sample themselves in test_ray_backend.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cockpit.engine.telemetry import NVIDIA_SMI_QUERY, node_sample, parse_nvidia_smi
from cockpit.store.models import TelemetrySample
from cockpit.tui.widgets.gpu_panel import node_lines

DATA = Path(__file__).with_name("data")
RECORDED = DATA / "nvidia-smi-query-gpu.csv"  # an H100 under load


def test_recorded_nvidia_smi_output_reads_as_samples() -> None:
    """Recorded on an H100 (driver 580.159.04) with NVIDIA_SMI_QUERY: under a matmul loop, and
    idle."""
    busy, idle = RECORDED.read_text(), (DATA / "nvidia-smi-query-gpu-idle.csv").read_text()
    names = [h.split(" [")[0] for h in busy.splitlines()[0].split(", ")]
    assert names == NVIDIA_SMI_QUERY.replace("clocks.sm", "clocks.current.sm").split(",")
    assert parse_nvidia_smi(busy) == [
        {
            "gpu": 0,
            "util": 100.0,
            "mem_used": 1395.0,
            "mem_total": 81559.0,
            "power_w": 676.25,
            "temp_c": 55.0,
            "sm_clock_mhz": 1980.0,
        }
    ]
    (row,) = parse_nvidia_smi(idle)
    assert (row["util"], row["mem_used"], row["power_w"], row["sm_clock_mhz"]) == (
        0.0,
        0.0,
        73.61,
        345.0,
    )


def test_values_nvidia_smi_cannot_give_stay_empty() -> None:
    text = (
        "index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W], "
        "temperature.gpu, clocks.current.sm [MHz]\n"
        "0, [N/A], 1 MiB, 81559 MiB, [Not Supported], 31, 345 MHz\n"
    )
    assert parse_nvidia_smi(text) == [
        {
            "gpu": 0,
            "util": None,
            "mem_used": 1.0,
            "mem_total": 81559.0,
            "power_w": None,
            "temp_c": 31.0,
            "sm_clock_mhz": 345.0,
        }
    ]
    assert parse_nvidia_smi("") == []


def test_a_node_without_pynvml_reads_nvidia_smi_and_one_without_either_reports_no_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """node_sample as a node runs it: pynvml made unimportable; an `nvidia-smi` on PATH that
    prints the recorded output (this machine has no GPU), then none."""
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\ncat '{RECORDED}'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    rows = node_sample()
    assert [r["gpu"] for r in rows] == [r["gpu"] for r in parse_nvidia_smi(RECORDED.read_text())]
    assert {r["source"] for r in rows} == {"nvidia-smi"}
    assert all(r["cpu_pct"] is not None and r["ram_pct"] is not None for r in rows)
    assert [r["gpu"] for r in node_sample([0])] == [0]
    smi.unlink()
    (row,) = node_sample()
    assert (row["gpu"], row["source"]) == (None, "none") and row["ram_pct"] > 0


def test_the_panel_says_one_line_per_node() -> None:
    def gpu(t: float, node: str, i: int, util: float) -> TelemetrySample:
        return TelemetrySample(t, i, util, 40_960, 81_559, 310.0, 61.0, 1980.0, 5.0, 20.0, node)

    samples = (
        TelemetrySample(100.0, None, cpu_pct=3.0, ram_pct=10.0),  # the engine's host
        gpu(100.0, "gpu-a 1a2b3c4d", 0, 97.0),
        gpu(100.0, "gpu-a 1a2b3c4d", 1, 12.0),
        TelemetrySample(88.0, None, cpu_pct=50.0, ram_pct=30.0, node="cpu-b 9f8e7d6c"),
        gpu(101.0, "gpu-a 1a2b3c4d", 0, 95.0),
        gpu(101.0, "gpu-a 1a2b3c4d", 1, 14.0),
    )
    assert node_lines(samples) == [
        "cpu-b 9f8e7d6c: no GPU · cpu 50% ram 30% (no reading for 13 s)",
        "gpu-a 1a2b3c4d: GPU 0 95% 40G 310W 61°C · GPU 1 14% 40G 310W 61°C",
    ]
    assert node_lines(samples[:1]) == []  # a local run: no node lines


def test_a_record_written_before_node_telemetry_reads_and_takes_it(tmp_path: Path) -> None:
    """The example session's record has no `node` column: read-only it reads as the engine's
    host; opened to write, it gains the column and keeps every earlier sample."""
    from cockpit.store import SessionRecord
    from cockpit.tui.sources.reads import telemetry_before

    example = Path(__file__).parents[2] / "sessions" / "examples" / "qr-h200-2026-11-30g"
    folder = tmp_path / example.name
    folder.mkdir()
    (folder / "session.db").write_bytes((example / "session.db").read_bytes())
    with SessionRecord.open_readonly(folder) as rec:
        before = rec.telemetry()
        assert before and {s.node for s in before} == {None}
        assert telemetry_before(rec, None, 5) == tuple(before[-5:])
    with SessionRecord.open(folder) as rec:
        rec.add_telemetry([TelemetrySample(before[-1].t + 1, None, cpu_pct=1.0, node="n 1")])
        after = rec.telemetry()
    assert after[:-1] == before and after[-1].node == "n 1"
