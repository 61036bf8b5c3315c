"""What Inductor generates for a task's reference at given shapes: the Triton kernels and the
launch configurations `torch.compile` picks, to see why it wins where it does.

    python bench/inductor_code.py --task rmsnorm --shape 65537x257:float32 65537x257:bfloat16 \
        --out $OUT/inductor

Compiles `torch.compile(reference, dynamic=False)` once per shape (a fresh Dynamo cache each
time, so each shape gets its own specialization), calls it once on the task's own inputs, and
writes the generated module (`TORCH_LOGS=output_code`) to OUT/TASK-ROWSxCOLS-DTYPE.py.txt. Prints
one line per shape with the kernels' names and, where Inductor states them, their configs.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TORCH_LOGS", "output_code")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from benchlib import load_module  # noqa: E402

from cockpit.harness.task import load_task  # noqa: E402


def parse_shape(text: str) -> dict:
    """'65537x257:bfloat16' -> {'rows': 65537, 'cols': 257, 'dtype': 'bfloat16'}."""
    m = re.fullmatch(r"(\d+)x(\d+)(?::(float32|bfloat16))?", text)
    if not m:
        raise SystemExit(f"error: bad --shape {text!r}: expected ROWSxCOLS[:float32|bfloat16]")
    return {"rows": int(m[1]), "cols": int(m[2]), "dtype": m[3] or "float32"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--shape", nargs="+", required=True, help="ROWSxCOLS[:DTYPE] ...")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default="bench/results/inductor")
    args = p.parse_args()
    task = load_task(args.task)
    ref = load_module(task.reference_path, f"inductor_ref_{task.name}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    logging.getLogger("torch._inductor").addHandler(handler)
    tuner = logging.getLogger("torch._inductor.runtime.triton_heuristics")  # the config it picks
    tuner.setLevel(logging.DEBUG)
    tuner.addHandler(handler)
    for text in args.shape:
        shape = parse_shape(text)
        torch._dynamo.reset()
        buf.seek(0)
        buf.truncate()
        inputs = ref.make_inputs(shape, 11, args.device)
        fn = torch.compile(ref.reference, dynamic=False)
        fn(*inputs)
        if args.device == "cuda":
            torch.cuda.synchronize()
        code = buf.getvalue()
        name = f"{task.name}-{shape['rows']}x{shape['cols']}-{shape['dtype']}.py.txt"
        (out / name).write_text(code)
        kernels = sorted(set(re.findall(r"def (triton_\w+)\(", code)))
        configs = re.findall(r"triton_meta=.*|@triton_heuristics\.\w+\([^@]*?\)\n", code)
        print(f"{text}: {len(code)} chars, kernels {kernels} -> {out / name}", flush=True)
        for c in configs[:6]:
            print("   ", " ".join(c.split())[:300], flush=True)


if __name__ == "__main__":
    main()
