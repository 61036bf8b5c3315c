"""Prove that two versions of a row seed launch the same kernels, without a GPU.

    python bench/ptx_compare.py softmax --old main --json out.json
    python bench/ptx_compare.py rmsnorm --old main --new kernels/rmsnorm/seeds/triton_tiled.py
    python bench/ptx_compare.py softmax --old /tmp/before.py --new /tmp/after.py --dump /tmp/ptx

For every shape of the task's task.toml (the GPU sets public, benchmark and hidden, and the CPU
sets) in each dtype, both files' `kernel(...)` run on stand-in tensors that claim to live on a
132-SM CUDA device (an H100 / H200), so the host code plans its launches as on that GPU; each
launch is recorded (kernel, grid, arguments, constexprs, launch options) instead of run. The
CPU sets are planned as on the CPU (1 SM, no PDL). Every launched kernel is then specialized
the way Triton's launcher specializes it (its own binder: pointer dtypes, integers divisible by
16 or equal to 1, pointers on 16 bytes as the caching allocator hands them out) and compiled to
PTX for sm_90 (Triton ships ptxas; no GPU or driver needed), with line information off
(`TRITON_DISABLE_LINE_INFO=1`) so that moving code inside the file does not change the PTX.

A launch of the new file matches the old one when it calls a kernel of the same name with the
same grid, runtime arguments, launch options and PTX; the constexprs it no longer passes (the
parameters of deleted switches) are listed, not counted as a difference, provided the PTX is
identical. A runtime argument the old kernel took and never read (its PTX declares the
parameter and loads nothing from it) may be gone from the new one: the PTX is then compared
with parameters named by argument instead of by position and that unread declaration left out
(`ptx_identical` counts these, `ptx_identical_raw` only byte-identical text). Prints one line
per launch that differs and a summary; --json writes both, --dump the two PTX of each
differing launch.
"""

from __future__ import annotations

import os

os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
os.environ.pop("TRITON_INTERPRET", None)

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import tomllib  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
from benchlib import load_module  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource, make_backend  # noqa: E402
from triton.runtime.jit import JITFunction, create_function_from_signature  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = GPUTarget("cuda", 90, 32)
SMS = 132
GPU = torch.device("cuda", 0)
CPU = torch.device("cpu")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


class FakeTensor:
    """What a seed's host code reads of a tensor: shape, contiguous strides, dtype, device and a
    data pointer on a 256-byte boundary (as the CUDA caching allocator hands them out)."""

    _next = 1 << 20

    def __init__(self, shape, dtype, device):
        self.shape = torch.Size(shape)
        self.dtype, self.device = dtype, device
        self.is_cuda = device.type == "cuda"
        self._strides = tuple(
            int(torch.tensor(shape[i + 1 :], dtype=torch.int64).prod()) for i in range(len(shape))
        )
        self._ptr = FakeTensor._next
        size = max(1, self.numel()) * self.element_size()
        FakeTensor._next += (size + 255) // 256 * 256 + 256

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def element_size(self) -> int:
        return torch.empty(0, dtype=self.dtype).element_size()

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def data_ptr(self) -> int:
        return self._ptr

    def contiguous(self):
        return self

    def is_contiguous(self) -> bool:
        return True

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]


class TorchShim(types.ModuleType):
    """The seed's `torch`, with allocation returning FakeTensors on the planned device."""

    def __init__(self):
        super().__init__("torch")

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def empty_like(t, *args, dtype=None, device=None, **kwargs):
        return FakeTensor(t.shape, dtype or t.dtype, device or t.device)

    @staticmethod
    def empty(*shape, dtype=torch.float32, device=None, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        return FakeTensor(shape, dtype, device or CPU)

    zeros = empty


class Recorder:
    """A kernel stand-in: `fn[grid](*args, **kwargs)` records the launch."""

    def __init__(self, name: str, fn: JITFunction, log: list):
        self.name, self.fn, self.log = name, fn, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append((self.name, self.fn, tuple(grid), args, kwargs))

        return launch


def shapes(task: str) -> list[tuple[str, int, int, str]]:
    """(set, rows, cols, dtype) of every shape of the task, in both dtypes, each once."""
    spec = tomllib.loads((ROOT / "kernels" / task / "task.toml").read_text())
    seen, out = set(), []
    for where, table in (("gpu", spec["shapes"]), ("cpu", spec["shapes"].get("cpu", {}))):
        for name in ("public", "benchmark", "hidden"):
            for s in table.get(name, []):
                for dtype in DTYPES:
                    key = (where, s["rows"], s["cols"], dtype)
                    if key not in seen:
                        seen.add(key)
                        out.append((f"{where}:{name}", s["rows"], s["cols"], dtype))
    return out


def plan(module, task: str, rows: int, cols: int, dtype: str, device) -> list:
    """The launches `module.kernel` makes for one shape on `device` (a 132-SM GPU or the CPU)."""
    kernels = {n: v for n, v in vars(module).items() if isinstance(v, JITFunction)}
    log: list = []
    saved_torch = module.torch
    module._SMS.clear()
    module._SMS[device] = SMS if device.type == "cuda" else 1
    try:
        module.torch = TorchShim()
        for name, fn in kernels.items():
            setattr(module, name, Recorder(name, fn, log))
        t = DTYPES[dtype]
        args = [FakeTensor((rows, cols), t, device)]
        if task == "rmsnorm":
            args.append(FakeTensor((cols,), t, device))
        module.kernel(*args)
    finally:
        module.torch = saved_torch
        for name, fn in kernels.items():
            setattr(module, name, fn)
        module._SMS.clear()
    return log


def _ptr_type(t: FakeTensor) -> str:
    return {torch.float32: "*fp32", torch.bfloat16: "*bf16", torch.int32: "*i32"}[t.dtype]


class SpecTensor:
    """What Triton's binder reads of a tensor argument: its dtype and data pointer."""

    def __init__(self, t: FakeTensor):
        self.dtype, self._ptr = t.dtype, t.data_ptr()

    def data_ptr(self) -> int:
        return self._ptr


def specialize(fn: JITFunction, args: tuple, kwargs: dict):
    """(signature, constexprs, attrs, options) as Triton's launcher computes them for sm_90."""
    backend = make_backend(TARGET)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    args = tuple(SpecTensor(a) if isinstance(a, FakeTensor) else a for a in args)
    bound, spec, options = binder(*args, **kwargs)
    kw = dict(kwargs, debug=False)
    options, signature, constexprs, attrs = fn._pack_args(backend, kw, bound, spec, options)
    return signature, constexprs, attrs, options


def describe(launch) -> dict:
    name, fn, grid, args, kwargs = launch
    sig_names = [p.name for p in fn.params]
    runtime, consts, opts = {}, {}, {}
    for i, a in enumerate(args):
        runtime[sig_names[i]] = _ptr_type(a) if isinstance(a, FakeTensor) else a
    for k, v in kwargs.items():
        if k in sig_names:
            p = fn.params[sig_names.index(k)]
            if p.is_constexpr:
                consts[k] = v
            else:
                runtime[k] = _ptr_type(v) if isinstance(v, FakeTensor) else v
        else:
            opts[k] = v
    return {"kernel": name, "grid": list(grid), "args": runtime, "constexprs": consts,
            "options": opts}  # fmt: skip


_PTX: dict = {}
_PARAMS: dict = {}  # PTX text -> the names of its .param entries, in order
DUMP: Path | None = None  # --dump: where the PTX of launches that differ is written


def ptx(launch) -> str:
    """The sm_90 PTX of a launch (memoized on the kernel's source and its specialization)."""
    name, fn, grid, args, kwargs = launch
    signature, constexprs, attrs, options = specialize(fn, args, kwargs)
    key = (fn.cache_key, repr(sorted(signature.items())), repr(sorted(constexprs.items())),
           repr(sorted(attrs.items())), repr(options))  # fmt: skip
    if key not in _PTX:
        src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
        _PTX[key] = triton.compile(src, target=TARGET, options=options.__dict__).asm["ptx"]
        # the kernel's parameters: its runtime arguments, then Triton's two scratch pointers
        names = [k for k, v in signature.items() if v != "constexpr"]
        _PARAMS[_PTX[key]] = names + ["global_scratch", "profile_scratch"]
    return _PTX[key]


def normalized(text: str, name: str, drop: set[str]) -> str:
    """PTX with its parameters named by argument (`K_param_3` -> `K_param_cols`) and the
    declarations of `drop` (runtime arguments one version no longer passes) removed when nothing
    else in the PTX reads them; the rest of the text is untouched."""
    names = _PARAMS[text]
    pat = re.compile(rf"\b{re.escape(name)}_param_(\d+)\b")
    declared = re.findall(rf"^\s*\.param .*\b{re.escape(name)}_param_(\d+),?$", text, re.M)
    if len(declared) != len(names):
        return text  # an unexpected parameter list: compare the raw text
    text = pat.sub(lambda m: f"{name}_param_{names[int(m.group(1))]}", text)
    lines = []
    for line in text.splitlines():
        declared = re.match(rf"\s*\.param .*\b{re.escape(name)}_param_(\w+),?$", line)
        if declared:
            if declared.group(1) in drop and text.count(f"{name}_param_{declared.group(1)}") == 1:
                continue
            line = line.rstrip(",")
        lines.append(line)
    return "\n".join(lines)


def compare(task: str, old: Path, new: Path) -> dict:
    mods = {k: load_module(p, f"ptx_{k}_{task}") for k, p in (("old", old), ("new", new))}
    rows_out, differ, identical, launches, raw = [], 0, 0, 0, 0
    for where, rows, cols, dtype in shapes(task):
        device = GPU if where.startswith("gpu") else CPU
        plans = {k: plan(m, task, rows, cols, dtype, device) for k, m in mods.items()}
        entry = {"set": where, "rows": rows, "cols": cols, "dtype": dtype, "launches": []}
        if len(plans["old"]) != len(plans["new"]):
            differ += 1
            entry["problem"] = f"{len(plans['old'])} launches before, {len(plans['new'])} now"
        for lo, ln in zip(plans["old"], plans["new"]):
            launches += 1
            do, dn = describe(lo), describe(ln)
            po, pn = ptx(lo), ptx(ln)
            dropped = {k: v for k, v in do["constexprs"].items() if k not in dn["constexprs"]}
            gone = {k: v for k, v in do["args"].items() if k not in dn["args"]}
            same_plan = (
                do["kernel"] == dn["kernel"] and do["grid"] == dn["grid"]
                and all(do["args"].get(k) == v for k, v in dn["args"].items())
                and do["options"] == dn["options"]
                and all(do["constexprs"].get(k) == v for k, v in dn["constexprs"].items())
            )  # fmt: skip
            raw_same = po == pn
            same_ptx = raw_same or (
                normalized(po, do["kernel"], set(gone)) == normalized(pn, dn["kernel"], set())
            )
            identical += same_ptx
            raw += raw_same
            if not (same_plan and same_ptx):
                differ += 1
            entry["launches"].append({
                "old": do, "new": dn, "constexprs_dropped": dropped, "args_dropped": gone,
                "same_plan": same_plan, "ptx_identical": same_ptx, "ptx_identical_raw": raw_same, "ptx_sha256": hashlib.sha256(pn.encode()).hexdigest(),
                "ptx_lines": pn.count("\n"),
            })  # fmt: skip
            if not same_ptx and DUMP:
                stem = f"{where.replace(':', '-')}-{rows}x{cols}-{dtype}-{dn['kernel']}"
                (DUMP / f"{stem}.old.ptx").write_text(po)
                (DUMP / f"{stem}.new.ptx").write_text(pn)
            if not (same_plan and same_ptx):
                print(f"DIFFER {where} {rows}x{cols} {dtype} {do['kernel']} -> {dn['kernel']}: "
                      f"plan {'same' if same_plan else 'differs'}, "
                      f"PTX {'identical' if same_ptx else 'differs'}", flush=True)  # fmt: skip
        rows_out.append(entry)
    return {"task": task, "old": str(old), "new": str(new), "target": "sm_90 (cuda, 90, 32)",
            "sms": SMS, "shapes": len(rows_out), "launches_compared": launches,
            "ptx_identical": identical, "ptx_identical_raw": raw,
            "launches_differing": differ,
            "distinct_kernels_compiled": len(_PTX), "triton": triton.__version__,
            "detail": rows_out}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", choices=["softmax", "rmsnorm"])
    ap.add_argument(
        "--old", default="main", help="a git revision holding the old seed (main), or a file"
    )
    ap.add_argument("--new", type=Path, help="the new seed (default: the working tree's)")
    ap.add_argument("--json", type=Path, help="write the summary and every launch here")
    ap.add_argument("--dump", type=Path, help="write both PTX of every launch that differs here")
    a = ap.parse_args()
    global DUMP
    DUMP = a.dump
    if DUMP:
        DUMP.mkdir(parents=True, exist_ok=True)
    rel = f"kernels/{a.task}/seeds/triton_tiled.py"
    new = a.new or ROOT / rel
    if Path(a.old).is_file():
        text, label = Path(a.old).read_text(), a.old
    else:
        label = f"{a.old}:{rel}"
        git = ["git", "show", label]
        text = subprocess.run(git, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / f"old_{a.task}_triton_tiled.py"
        old.write_text(text)
        res = compare(a.task, old, new)
    res["old"] = label
    res["new"] = str(new.relative_to(ROOT)) if new.is_relative_to(ROOT) else str(new)
    summary = {k: v for k, v in res.items() if k != "detail"}
    print(json.dumps(summary, indent=1))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0 if res["launches_differing"] == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
