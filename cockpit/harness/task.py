"""Kernel tasks: a folder with `task.toml`, `reference.py` and `seeds/`.

The task file is data, never code: roofline formulas are arithmetic over a shape's keys, parsed
with `ast` and evaluated with no names but those keys, so a task folder cannot run code in the
engine just by being listed. `reference.py` *is* code, but it only ever runs in the judge process
(see `judge.py`), never next to a candidate.
"""

from __future__ import annotations

import ast
import math
import operator
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4}
SHAPE_SETS = ("public", "hidden", "benchmark")
RESERVED_KEYS = {"dtype", "weight", "timed", "label", "hidden", "tier"}
# The loop's cascade (judge.Options.cascade): every candidate is verified and briefly timed on
# the `screen` shapes; only one that could become a branch's best goes on to the `promote` ones.
TIERS = ("screen", "promote")
# How a task's calls are timed (`timing` in task.toml). kernel: the GPU time of the call alone,
# its launch kept out of the clock by a hold on every SM (decisions 0016, 0017). end_to_end: the
# wall time of the call as a user's loop sees it, from the call to the device synchronize after
# it (host and GPU, no hold): for a whole step such as decode, whose host overhead is the point.
# On the CPU both are the call's wall time.
TIMINGS = ("kernel", "end_to_end")


class TaskError(ValueError):
    """A task folder that cannot be used; the message is one line naming file and field."""


@dataclass(frozen=True)
class Shape:
    """One input configuration: free parameters for `make_inputs` plus harness metadata."""

    params: dict[str, Any]
    set: str  # public | hidden | benchmark
    weight: float = 1.0
    timed: bool = True
    label: str = ""
    # screen | promote: a verify-only shape (the > 2**31-element ones) is `promote` unless the
    # task says otherwise, every other shape `screen`
    tier: str = "screen"

    @property
    def dtype(self) -> str:
        return str(self.params.get("dtype", "float32"))

    @property
    def hidden(self) -> bool:
        return self.set == "hidden"

    def describe(self) -> str:
        """Compact text like `rows=17 cols=4099 bfloat16`; hidden shapes only by index elsewhere."""
        if self.label:
            return self.label
        parts = [f"{k}={v}" for k, v in self.params.items() if k != "dtype"]
        return " ".join(parts + [self.dtype])

    def env(self) -> dict[str, float]:
        """Names available to roofline formulas."""
        names = {k: v for k, v in self.params.items() if isinstance(v, int | float)}
        names["itemsize"] = ITEMSIZE.get(self.dtype, 4)
        return names


@dataclass(frozen=True)
class Limits:
    """How long one call of a candidate may take before the judge ends it as hung (`[limits]`
    in task.toml; seconds). A call may take `call_factor` times the reference's stored time on
    its shape, at least `call_floor_s`; the first call on each shape also gets `first_call_s`
    (a JIT compiles there). One pair of defaults for the GPU and one for the CPU, where the
    Triton interpreter is orders of magnitude slower than anything compiled."""

    call_floor_s: float = 10.0
    call_factor: float = 50.0
    first_call_s: float = 30.0
    cpu_call_floor_s: float = 60.0
    cpu_first_call_s: float = 120.0

    def for_device(self, device: str) -> dict[str, float]:
        cpu = device == "cpu"
        return {
            "call_floor_s": self.cpu_call_floor_s if cpu else self.call_floor_s,
            "call_factor": self.call_factor,
            "first_call_s": self.cpu_first_call_s if cpu else self.first_call_s,
        }


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class Report:
    """How to state a call's speed as a rate (`[report]` in task.toml): `per_call` units of work
    per call, e.g. one token per decode step, shown as `unit` (e.g. "tok/s") next to times."""

    unit: str
    per_call: float = 1.0

    def rate(self, time_us: float | None) -> float | None:
        """Units per second at `time_us` per call."""
        return self.per_call * 1e6 / time_us if time_us and time_us > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "per_call": self.per_call}


@dataclass
class Task:
    name: str
    root: Path
    summary: str
    signature: str
    inputs: list[str]
    outputs: list[str]
    tolerance: dict[str, Tolerance]
    flops: str
    bytes: str
    shapes: dict[str, dict[str, list[Shape]]]  # device class ("gpu"|"cpu") -> set -> shapes
    forbidden: list[str] = field(default_factory=list)  # qualified names / substrings
    forbidden_ops: list[str] = field(default_factory=list)  # aten op base names
    allow_inplace: bool = False
    contiguous_outputs: bool = True
    time_limit_s: float = 600.0
    description: str = ""
    hidden_hint: str = ""
    batch_inputs: list[str] = field(default_factory=list)  # inputs whose rows are independent
    baseline_seeds: list[str] = field(default_factory=list)  # exempt from forbidden-call rules
    peak: str = ""  # which measured FLOP rate bounds the compute floor: fp32 | tf32 | bf16
    report: Report | None = None  # optional throughput unit (`[report]`), e.g. tokens/s
    limits: Limits = field(default_factory=Limits)
    timing: str = "kernel"  # one of TIMINGS

    @property
    def reference_path(self) -> Path:
        return self.root / "reference.py"

    @property
    def seeds_dir(self) -> Path:
        return self.root / "seeds"

    def seeds(self) -> list[Path]:
        return sorted(p for p in self.seeds_dir.glob("*.py") if not p.name.startswith("_"))

    @property
    def forbidden_cnames(self) -> list[str]:
        """The forbidden numpy/scipy functions by bare name, as the arena's profile hook
        matches them (`numpy.linalg.qr` -> `qr`)."""
        return [
            f.split(".")[-1]
            for f in self.forbidden
            if "." in f and f.split(".")[0] in ("numpy", "scipy")
        ]

    def shape_set(self, device: str, name: str) -> list[Shape]:
        return self.shapes["cpu" if device == "cpu" else "gpu"][name]

    def floor_inputs(self, shape: Shape) -> tuple[float, float]:
        """(FLOPs, minimum bytes) of one call at `shape`."""
        env = shape.env()
        return eval_formula(self.flops, env), eval_formula(self.bytes, env)


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}
_FUNCS = {"min": min, "max": max, "log2": math.log2, "ceil": math.ceil, "sqrt": math.sqrt}


def eval_formula(text: str, env: dict[str, float]) -> float:
    """Evaluate arithmetic over `env` names; anything else (attributes, calls but a few) is refused."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise TaskError(f"formula {text!r}: unknown name {node.id!r}")
            return env[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 16 or abs(left) > 1e12):
                raise TaskError(f"formula {text!r}: exponent too large")
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            return _FUNCS[node.func.id](*[ev(a) for a in node.args])
        raise TaskError(f"formula {text!r}: only arithmetic over shape keys is allowed")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise TaskError(f"formula {text!r}: {exc.msg}") from None
    return float(ev(tree))


def find_task(spec: str | Path, kernels_dir: Path | None = None) -> Path:
    """A task is a name under `kernels/` or a path to any folder holding `task.toml`."""
    path = Path(spec)
    if (path / "task.toml").is_file():
        return path.resolve()
    base = kernels_dir or default_kernels_dir()
    named = base / str(spec)
    if (named / "task.toml").is_file():
        return named.resolve()
    if path.exists():
        raise TaskError(f"{path}: not a task folder (no task.toml)")
    raise TaskError(f"unknown task {str(spec)!r}: not a folder and not a name under {base}")


def default_kernels_dir() -> Path:
    import os

    env = os.environ.get("COCKPIT_KERNELS_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2] / "kernels"
    return here if here.is_dir() else Path.cwd() / "kernels"


def list_tasks(kernels_dir: Path | None = None) -> list[Path]:
    base = kernels_dir or default_kernels_dir()
    return sorted(p.parent for p in base.glob("*/task.toml"))


def _shape_list(raw: Any, where: str, set_name: str) -> list[Shape]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        raise TaskError(f"{where}: must be a list of tables")
    shapes = []
    for i, s in enumerate(raw):
        params = {k: v for k, v in s.items() if k not in RESERVED_KEYS}
        if "dtype" in s:
            params["dtype"] = s["dtype"]
        dtype = params.get("dtype", "float32")
        if dtype not in ITEMSIZE:
            raise TaskError(f"{where}[{i}].dtype: unknown dtype {dtype!r}")
        weight = s.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            raise TaskError(f"{where}[{i}].weight: must be a positive number")
        timed = s.get("timed", True)
        if not isinstance(timed, bool):
            raise TaskError(f"{where}[{i}].timed: must be true or false, not {timed!r}")
        label = s.get("label", "")
        if not isinstance(label, str):
            raise TaskError(f"{where}[{i}].label: must be a string")
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, int | float | str):
                raise TaskError(f"{where}[{i}].{k}: must be a number or a string, not {v!r}")
        tier = s.get("tier", "screen" if timed else "promote")
        if tier not in TIERS:
            raise TaskError(f"{where}[{i}].tier: must be one of {', '.join(TIERS)}, not {tier!r}")
        if set_name == "public" and tier != "screen":
            raise TaskError(f"{where}[{i}].tier: public shapes are always screened")
        shapes.append(
            Shape(
                params=params,
                set=set_name,
                weight=float(weight),
                timed=timed,
                label=label,
                tier=tier,
            )
        )
    return shapes


def _report(raw: Any, toml_path: Path) -> Report | None:
    """`[report] unit = "tok/s"  per_call = 1`: optional; absent means times only."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TaskError(f"{toml_path}: field 'report' must be a table (unit, per_call)")
    unknown = sorted(set(raw) - {"unit", "per_call"})
    if unknown:
        raise TaskError(
            f"{toml_path}: unknown field 'report.{unknown[0]}' (expected unit, per_call)"
        )
    unit = raw.get("unit")
    if not isinstance(unit, str) or not unit.strip() or len(unit) > 24:
        raise TaskError(f"{toml_path}: field 'report.unit' must be a short non-empty string")
    per_call = raw.get("per_call", 1)
    if (
        isinstance(per_call, bool)
        or not isinstance(per_call, int | float)
        or not math.isfinite(per_call)
        or per_call <= 0
    ):
        raise TaskError(f"{toml_path}: field 'report.per_call' must be a positive number")
    return Report(unit=unit.strip(), per_call=float(per_call))


def _limits(raw: Any, toml_path: Path) -> Limits:
    """`[limits] call_floor_s = 10  call_factor = 50  first_call_s = 30 ...`: all optional."""
    if raw is None:
        return Limits()
    if not isinstance(raw, dict):
        raise TaskError(f"{toml_path}: field 'limits' must be a table")
    known = set(Limits.__dataclass_fields__)
    out = {}
    for k, v in raw.items():
        if k not in known:
            raise TaskError(
                f"{toml_path}: unknown field 'limits.{k}' (expected {', '.join(sorted(known))})"
            )
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise TaskError(f"{toml_path}: field 'limits.{k}' must be a positive number")
        out[k] = float(v)
    return Limits(**out)


# Every top-level field of task.toml and its check; anything else is refused (a misspelt
# `time_limit_s` or `forbiden` would otherwise be silently ignored).
def _kind_str(v: Any) -> bool:
    return isinstance(v, str)


def _kind_names(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v)


def _kind_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _kind_positive(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v) and v > 0


def _kind_table(v: Any) -> bool:
    return isinstance(v, dict)


_KINDS = {
    _kind_str: "a string",
    _kind_names: "a list of non-empty strings",
    _kind_bool: "true or false",
    _kind_positive: "a positive number",
    _kind_table: "a table",
}
# field -> (check, required)
FIELDS: dict[str, tuple[Callable[[Any], bool], bool]] = {
    "name": (_kind_str, True),
    "inputs": (_kind_names, True),
    "outputs": (_kind_names, True),
    "tolerance": (_kind_table, True),
    "roofline": (_kind_table, True),
    "shapes": (_kind_table, True),
    "summary": (_kind_str, False),
    "signature": (_kind_str, False),
    "description": (_kind_str, False),
    "hidden_hint": (_kind_str, False),
    "forbidden": (_kind_names, False),
    "forbidden_ops": (_kind_names, False),
    "batch_inputs": (_kind_names, False),
    "baseline_seeds": (_kind_names, False),
    "allow_inplace": (_kind_bool, False),
    "contiguous_outputs": (_kind_bool, False),
    "time_limit_s": (_kind_positive, False),
    "timing": (_kind_str, False),
    "report": (_kind_table, False),
    "limits": (_kind_table, False),
    # named numbers the description and the reference share (`eps`, `rope_theta`); data only
    "constants": (_kind_table, False),
}
ROOFLINE_FIELDS = ("flops", "bytes", "peak")
PEAKS = ("fp32", "tf32", "bf16")


def _check_fields(data: dict[str, Any], toml_path: Path) -> None:
    """Unknown, missing and mistyped top-level fields, the first one found, in file order."""
    for key in data:
        if key not in FIELDS:
            raise TaskError(
                f"{toml_path}: unknown field {key!r} (known: {', '.join(sorted(FIELDS))})"
            )
    for key, (check, required) in FIELDS.items():
        if key not in data:
            if required:
                raise TaskError(f"{toml_path}: missing field {key!r}")
            continue
        if not check(data[key]):
            raise TaskError(
                f"{toml_path}: field {key!r} has the wrong type: must be {_KINDS[check]}, "
                f"not {type(data[key]).__name__}"
            )
    if not data["name"].strip():
        raise TaskError(f"{toml_path}: field 'name' must not be empty")
    for key in ("inputs", "outputs"):
        if not data[key]:
            raise TaskError(f"{toml_path}: field {key!r} must name at least one tensor")
    if data.get("timing", "kernel") not in TIMINGS:
        raise TaskError(
            f"{toml_path}: field 'timing' must be one of {', '.join(TIMINGS)}, "
            f"not {data['timing']!r}"
        )
    for k, v in data.get("constants", {}).items():
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise TaskError(f"{toml_path}: field 'constants.{k}' must be a number or a string")


def _tolerance(raw: dict[str, Any], toml_path: Path) -> dict[str, Tolerance]:
    out = {}
    for dtype, t in raw.items():
        if dtype not in ITEMSIZE:
            raise TaskError(
                f"{toml_path}: field 'tolerance.{dtype}': unknown dtype "
                f"(known: {', '.join(ITEMSIZE)})"
            )
        if not isinstance(t, dict) or not {"atol", "rtol"} <= set(t):
            raise TaskError(f"{toml_path}: tolerance.{dtype} needs atol and rtol")
        for k, v in t.items():
            if k not in ("atol", "rtol"):
                raise TaskError(
                    f"{toml_path}: unknown field 'tolerance.{dtype}.{k}' (expected atol, rtol)"
                )
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < math.inf:
                raise TaskError(f"{toml_path}: field 'tolerance.{dtype}.{k}' must be a number >= 0")
        out[dtype] = Tolerance(float(t["atol"]), float(t["rtol"]))
    return out


def _roofline(roof: dict[str, Any], toml_path: Path) -> None:
    for key in roof:
        if key not in ROOFLINE_FIELDS:
            raise TaskError(
                f"{toml_path}: unknown field 'roofline.{key}' (expected {', '.join(ROOFLINE_FIELDS)})"
            )
    for key in ("flops", "bytes"):
        if key not in roof:
            raise TaskError(f"{toml_path}: missing field 'roofline.{key}'")
        if not isinstance(roof[key], str):
            raise TaskError(f"{toml_path}: field 'roofline.{key}' must be a formula in a string")
    if "peak" in roof and roof["peak"] not in PEAKS:
        raise TaskError(
            f"{toml_path}: field 'roofline.peak' must be one of {', '.join(PEAKS)}, "
            f"not {roof['peak']!r}"
        )


def _shape_tables(raw: dict[str, Any], toml_path: Path) -> dict[str, dict[str, list[Shape]]]:
    cpu = raw.get("cpu", {})
    for where, table, known in (
        ("shapes", raw, (*SHAPE_SETS, "cpu")),
        ("shapes.cpu", cpu, SHAPE_SETS),
    ):
        if not isinstance(table, dict):
            raise TaskError(f"{toml_path}: field {where!r} must be a table")
        for key in table:
            if key not in known:
                raise TaskError(
                    f"{toml_path}: unknown field '{where}.{key}' (expected {', '.join(known)})"
                )
    shapes: dict[str, dict[str, list[Shape]]] = {}
    for device, table in (("gpu", raw), ("cpu", cpu)):
        shapes[device] = {
            s: _shape_list(
                table.get(s), f"{toml_path}: shapes{'.cpu' if device == 'cpu' else ''}.{s}", s
            )
            for s in SHAPE_SETS
        }
        if not shapes[device]["public"]:
            where = "shapes.cpu.public" if device == "cpu" else "shapes.public"
            raise TaskError(f"{toml_path}: missing field {where!r} (at least one shape)")
    return shapes


def load_task(spec: str | Path, kernels_dir: Path | None = None) -> Task:
    root = find_task(spec, kernels_dir)
    toml_path = root / "task.toml"
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{toml_path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise TaskError(f"{toml_path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise TaskError(f"{toml_path}: cannot be read ({exc.strerror or exc})") from None
    _check_fields(data, toml_path)
    name = data["name"]
    roof = data["roofline"]
    tolerance = _tolerance(data["tolerance"], toml_path)
    _roofline(roof, toml_path)
    shapes = _shape_tables(data["shapes"], toml_path)
    task = Task(
        name=name,
        report=_report(data.get("report"), toml_path),
        limits=_limits(data.get("limits"), toml_path),
        root=root,
        summary=data.get("summary", ""),
        signature=data.get("signature", ""),
        inputs=list(data["inputs"]),
        outputs=list(data["outputs"]),
        tolerance=tolerance,
        flops=roof["flops"],
        bytes=roof["bytes"],
        shapes=shapes,
        forbidden=list(data.get("forbidden", [])),
        forbidden_ops=list(data.get("forbidden_ops", [])),
        allow_inplace=data.get("allow_inplace", False),
        contiguous_outputs=data.get("contiguous_outputs", True),
        time_limit_s=float(data.get("time_limit_s", 600.0)),
        description=data.get("description", ""),
        hidden_hint=data.get("hidden_hint", ""),
        batch_inputs=list(data.get("batch_inputs", [])),
        baseline_seeds=list(data.get("baseline_seeds", [])),
        peak=roof.get("peak", ""),
        timing=data.get("timing", "kernel"),
    )
    unknown = sorted(set(task.batch_inputs) - set(task.inputs))
    if unknown:
        raise TaskError(f"{toml_path}: field 'batch_inputs' names {unknown[0]!r}, not an input")
    if not task.reference_path.is_file():
        raise TaskError(f"{task.reference_path}: missing (every task needs reference.py)")
    for device in shapes:
        for s in shapes[device].values():
            for shape in s:
                try:
                    task.floor_inputs(shape)  # fail now, not mid-evaluation
                except (TaskError, ZeroDivisionError, OverflowError, ValueError) as exc:
                    raise TaskError(
                        f"{toml_path}: roofline.flops/bytes at {shape.describe()}: {exc}"
                    ) from None
    return task
