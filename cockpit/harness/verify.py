"""Judge-side correctness checks: the candidate's outputs against a float64 reference.

Runs in the judge process only. A task either relies on the default element-wise check below
(reference recomputed in float64, |out - ref| <= atol + rtol * |ref|, NaN/Inf gated) or ships its
own `check(inputs, outputs)` for outputs that are not unique (QR).
"""

from __future__ import annotations

import importlib.util
import math
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cockpit.harness.task import Task

CHUNK_ELEMS = 1 << 27  # float64 working set per chunk: 1 GiB per temporary


class _Reference:
    """The task's reference module, with `make_inputs` and `reference` guarded: whatever they
    raise becomes a TaskError naming reference.py, the function and the line (a broken task is
    the task author's to fix, exit 2, not a judge traceback nor a verdict on the candidate).
    Anything else (`check`, constants) is the module's own attribute."""

    def __init__(self, module: ModuleType, path: Path) -> None:
        self._module = module
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def make_inputs(self, *args: Any, **kw: Any) -> Any:
        return self._call("make_inputs", args, kw)

    def reference(self, *args: Any, **kw: Any) -> Any:
        return self._call("reference", args, kw)

    def _call(self, fn: str, args: tuple, kw: dict) -> Any:
        try:
            return getattr(self._module, fn)(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - any failure of trusted code is the task's
            raise _task_error(self._path, f"{fn}() raised", exc) from None


def _task_error(path: Path, what: str, exc: BaseException) -> Exception:
    """One line: `PATH: WHAT TypeName: first line of the message (line N)`."""
    from cockpit.harness.task import TaskError

    lines = [
        f.lineno
        for f in traceback.extract_tb(exc.__traceback__)
        if Path(f.filename).resolve() == path.resolve()
    ]
    where = f" (line {lines[-1]})" if lines else ""
    text = (str(exc).strip().splitlines() or [""])[0][:300]
    return TaskError(f"{path}: {what} {type(exc).__name__}{': ' + text if text else ''}{where}")


_LOADED: dict[str, _Reference] = {}


def load_reference(task: Task) -> _Reference:
    name = f"_cockpit_reference_{task.name}"
    key = str(task.reference_path.resolve())  # two task folders may share a name
    if key in _LOADED:
        return _LOADED[key]
    from cockpit.harness.task import TaskError

    spec = importlib.util.spec_from_file_location(name, task.reference_path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - SyntaxError, ImportError, whatever it raises
        if isinstance(exc, SyntaxError) and exc.lineno:
            raise TaskError(
                f"{task.reference_path}: syntax error at import: {exc.msg} (line {exc.lineno})"
            ) from None
        raise _task_error(task.reference_path, "raised at import:", exc) from None
    for fn in ("make_inputs", "reference"):
        if not callable(getattr(module, fn, None)):
            raise TaskError(f"{task.reference_path}: missing function {fn!r}")
    sys.modules[name] = module
    _LOADED[key] = _Reference(module, task.reference_path)
    return _LOADED[key]


def check_reference(task: Task) -> None:
    """Import reference.py and call `make_inputs` and `reference` once, on the first CPU public
    shape: a broken reference stops `cockpit run` at once with a TaskError instead of making
    every candidate of the session a crash."""
    ref = load_reference(task)
    shape = task.shape_set("cpu", "public")[0]
    ref.reference(*as_tuple(ref.make_inputs(dict(shape.params), 0, "cpu")))


def as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def expected_meta(
    ref: ModuleType, inputs: tuple[torch.Tensor, ...]
) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """Shapes and dtypes the reference produces, on the meta device when the ops allow it."""
    try:
        outs = as_tuple(ref.reference(*[t.to("meta") for t in inputs]))
    except Exception:  # noqa: BLE001 - some ops have no meta kernel; pay for a real call
        outs = as_tuple(ref.reference(*inputs))
    return [(tuple(o.shape), o.dtype) for o in outs]


def _upcast(t: torch.Tensor) -> torch.Tensor:
    return t.double() if t.is_floating_point() else t


def default_check(
    task: Task, ref: ModuleType, inputs: tuple[torch.Tensor, ...], outputs: list[torch.Tensor]
) -> tuple[bool, dict[str, Any]]:
    """Element-wise check against the float64 reference, chunked along dim 0 of the task's
    `batch_inputs` so a 2**31-element tensor does not need 5 float64 copies at once."""
    rows = inputs[0].shape[0] if inputs and inputs[0].dim() else 1
    per_row = max(inputs[0].numel() // max(rows, 1), 1) if inputs else 1
    step = max(CHUNK_ELEMS // per_row, 1) if task.batch_inputs else rows
    worst: dict[str, Any] = {
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "tol_ratio": 0.0,
        "bad": 0,
        "nonfinite": 0,
    }
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        sl = [
            (_upcast(t[lo:hi]) if task.inputs[i] in task.batch_inputs else _upcast(t))
            for i, t in enumerate(inputs)
        ]
        expect = as_tuple(ref.reference(*sl))
        for j, (o, e) in enumerate(zip(outputs, expect)):
            oc = o[lo:hi] if task.batch_inputs else o
            tol = task.tolerance.get(str(o.dtype).removeprefix("torch."))
            atol, rtol = (tol.atol, tol.rtol) if tol else (1e-5, 1e-5)
            od = oc.double()
            finite_e = torch.isfinite(e)
            nonfinite = int((~torch.isfinite(od) & finite_e).sum())
            diff = (od - e).abs()
            bound = atol + rtol * e.abs()
            ratio = torch.where(finite_e, diff / bound, torch.zeros_like(diff))
            ratio = torch.nan_to_num(ratio, nan=math.inf)
            bad = int((ratio > 1).sum())
            r = float(ratio.max()) if ratio.numel() else 0.0
            if r > worst["tol_ratio"] or (nonfinite and not worst["nonfinite"]):
                flat = int(ratio.argmax()) if ratio.numel() else 0
                idx = list(_unravel(flat, tuple(ratio.shape)))
                if idx:
                    idx[0] += lo if task.batch_inputs else 0
                worst.update(
                    tol_ratio=r,
                    where=idx,
                    output=task.outputs[j] if j < len(task.outputs) else str(j),
                    got=_f(od.reshape(-1)[flat]) if od.numel() else None,
                    want=_f(e.reshape(-1)[flat]) if e.numel() else None,
                )
            fd = diff[finite_e]
            worst["max_abs_err"] = max(worst["max_abs_err"], _f(fd.max()) if fd.numel() else 0.0)
            rel = fd / e.abs()[finite_e].clamp_min(1e-30)
            worst["max_rel_err"] = max(worst["max_rel_err"], _f(rel.max()) if rel.numel() else 0.0)
            worst["bad"] += bad
            worst["nonfinite"] += nonfinite
    ok = worst["bad"] == 0 and worst["nonfinite"] == 0
    if not ok:
        where = worst.get("where")
        row = f" row {where[0]}" if where else ""
        if worst["nonfinite"]:
            worst["message"] = (
                f"{worst['nonfinite']} NaN/Inf values where the reference is finite (first at{row or ' index 0'})"
            )
        else:
            worst["message"] = (
                f"{worst['bad']} elements out of tolerance; worst{row} at {where}: "
                f"got {worst['got']:.6g}, want {worst['want']:.6g} "
                f"({worst['tol_ratio']:.3g}x the tolerance); max abs err {worst['max_abs_err']:.3g}"
            )
    return ok, worst


def _f(x: Any) -> float:
    v = float(x)
    return (
        v
        if math.isfinite(v)
        else (math.inf if v > 0 else -math.inf)
        if not math.isnan(v)
        else math.nan
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for d in reversed(shape):
        out.append(flat % d if d else 0)
        flat //= d if d else 1
    return tuple(reversed(out))


def run_check(
    task: Task,
    ref: ModuleType,
    inputs: tuple[torch.Tensor, ...],
    outputs: list[torch.Tensor],
    strict: bool = False,
) -> tuple[bool, dict[str, Any]]:
    custom = getattr(ref, "check", None)
    if callable(custom):
        try:
            ok, metrics = (
                custom(inputs, tuple(outputs), strict=strict)
                if strict
                else custom(inputs, tuple(outputs))
            )
        except Exception as exc:  # noqa: BLE001 - a check that cannot run on these outputs failed them
            return False, {
                "message": f"the task's check raised {type(exc).__name__}: {str(exc)[:300]}"
            }
        return bool(ok), dict(metrics or {})
    return default_check(task, ref, inputs, outputs)
