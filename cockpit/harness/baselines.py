"""Stored baseline measurements (the reference, eager torch, torch.compile) for speedups.

Baselines are candidates the harness writes itself from the task's reference, evaluated with the
same protocol, and stored per task and machine under the data folder, so `cockpit eval` can print
"3.1x vs torch.compile" without re-measuring the baseline every time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cockpit.harness.scoring import data_dir, machine_key
from cockpit.harness.task import Task

# name -> how the reference function is wrapped
VARIANTS = {
    "reference": "kernel = reference",
    "compile": "kernel = torch.compile(reference)",
    "compile-max-autotune": 'kernel = torch.compile(reference, mode="max-autotune-no-cudagraphs")',
}


def baseline_source(task: Task, variant: str) -> str:
    src = task.reference_path.read_text()
    return f"{src}\n\n# --- written by `cockpit baseline` ---\nimport torch\n{VARIANTS[variant]}\nFAMILY = 'baseline'\n"


def path_for(task: Task, device: str) -> Path:
    return data_dir() / "baselines" / task.name / f"{machine_key(device)}.json"


def load(task: Task, device: str) -> dict[str, Any]:
    p = path_for(task, device)
    if not p.is_file():
        return {}
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def store(task: Task, device: str, name: str, result: dict[str, Any]) -> Path:
    p = path_for(task, device)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = load(task, device)
    data[name] = {
        "status": result.get("status"),
        "geomean_us": result.get("geomean_us"),
        "score_us": result.get("score_us"),
        "per_shape": {
            s["shape"]: s["timing"]["median_us"]
            for s in result.get("shapes", [])
            if s.get("timing")
        },
        "mode": result.get("mode"),
        "measured": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(p)
    return p
