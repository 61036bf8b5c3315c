"""`cockpit eval --parts N --backend ray`: the N parts of a sharded evaluation as Ray tasks.

Each part is one Ray task that requests one GPU (`num_gpus=1`), or `cpus` CPU slots on a CPU
cluster, for its whole run, so no two timed parts share a GPU; with fewer slots than parts, the
parts queue rather than share. The task runs on its node exactly what a local part runs, the
`cockpit eval TASK CANDIDATE --shard K/N --json` process (the judge, and the sandboxed arena it
spawns), with the task folder and the candidate sent as bytes and written to a temporary folder
there. What comes back is that process's exit code, stdout and stderr, plus where it ran; the
engine's host parses and merges them as it does local parts (`cockpit.cli._eval_parts`).

A part is a one-shot evaluation, so a Ray task (a fresh worker, nothing warm to keep) fits where a
run uses long-lived actors (decision 0003). A part whose node is lost is retried once by Ray
(`max_retries=1`), spread away from the busy nodes; lost again, the evaluation fails naming it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from cockpit.engine.ray_backend import (
    BackendUnavailable,
    _first_line,
    cluster_slots,
    connect,
    materialize,
    task_files,
)

# `python -m cockpit.cli` would load the CLI twice (as __main__ and as cockpit.cli)
_CLI = "import sys; from cockpit.cli import main; sys.exit(main())"


def run_part(
    folder_name: str,
    files: dict[str, bytes],
    cand_name: str,
    source: str,
    shard: str,
    flags: list[str],
) -> dict[str, Any]:
    """On a node: one part, as the local `--parts` path runs it (a `cockpit eval --shard` process
    with the `CUDA_VISIBLE_DEVICES` Ray gave this task). Returns rc, stdout, stderr and `node`."""
    import ray

    root = materialize(folder_name, files)
    with tempfile.TemporaryDirectory(prefix="cockpit-part-") as tmp:
        cand = Path(tmp) / cand_name
        cand.write_text(source)
        cmd = [sys.executable, "-c", _CLI, "eval", str(root), str(cand), "--shard", shard, *flags]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    ctx = ray.get_runtime_context()
    gpus = [str(g) for g in ray.get_gpu_ids()]
    return {
        "rc": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "node": {
            "node_id": ctx.get_node_id(),
            "host": socket.gethostname(),
            "ip": ray.util.get_node_ip_address(),
            "gpu": ",".join(gpus) if gpus else None,
        },
    }


def run_parts(
    task_root: str | Path,
    candidate: Path,
    n: int,
    device: str,
    flags: list[str],
    address: str | None = None,
    cpus: float = 1.0,
) -> list[dict[str, Any]]:
    """Run parts 1..N of `candidate` on the Ray cluster at `address` (see `connect`); returns
    each part's `run_part` dict, in part order. BackendUnavailable: no slot for a part on this
    cluster, or a part lost on two nodes."""
    ray = connect(address)
    try:
        if cluster_slots(ray.cluster_resources(), device, cpus) < 1:
            what = "GPU" if device != "cpu" else f"{cpus:g} CPU slots for one part"
            raise BackendUnavailable(f"the Ray cluster has no {what}")
        need = {"num_gpus": 1} if device != "cpu" else {"num_cpus": cpus}
        remote = ray.remote(run_part).options(
            max_retries=1, retry_exceptions=False, scheduling_strategy="SPREAD", **need
        )
        root = Path(task_root)
        files = ray.put(task_files(root))
        source = candidate.read_text()
        refs = [
            remote.remote(root.name, files, candidate.name, source, f"{k}/{n}", flags)
            for k in range(1, n + 1)
        ]
        out = []
        for k, ref in enumerate(refs, start=1):
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayTaskError as exc:  # run_part itself raised: not retried
                raise BackendUnavailable(
                    f"part {k}/{n} failed on its Ray node: {_first_line(exc.cause or exc)}"
                ) from None
            except ray.exceptions.RayError as exc:  # its worker or node was lost, twice
                raise BackendUnavailable(
                    f"part {k}/{n}: its Ray worker was lost, after one retry "
                    f"({type(exc).__name__}: {_first_line(exc)})"
                ) from None
        return out
    finally:
        ray.shutdown()


__all__ = ["run_part", "run_parts"]
