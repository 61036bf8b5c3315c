"""Human-readable views of harness results for the terminal (rich). No harness logic here."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

STATUS_STYLE = {
    "ok": "bold green",
    "wrong": "bold red",
    "rejected": "bold magenta",
    "load_error": "bold yellow",
    "timeout": "bold yellow",
    "crash": "bold red",
}


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


DTYPE_SHORT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}
SET_SHORT = {"public": "pub", "hidden": "hid", "benchmark": "bench"}


def compact_shape(params: dict[str, Any], fallback: str) -> str:
    """`16×512×2 dense f32` instead of `batch=16 n=512 cond=2 family=dense float32`."""
    if not params:
        return fallback
    nums = [str(v) for k, v in params.items() if k != "dtype" and isinstance(v, int | float)]
    words = [str(v) for k, v in params.items() if k != "dtype" and not isinstance(v, int | float)]
    dtype = DTYPE_SHORT.get(str(params.get("dtype", "")), str(params.get("dtype", "")))
    return " ".join(x for x in ["×".join(nums), *words, dtype] if x)


def result_table(r: dict[str, Any]) -> Table:
    t = Table(
        title=f"{r['task']} · {r['candidate']} · {r['device']} · {r['mode']}", title_justify="left"
    )
    t.add_column("shape", no_wrap=True)
    for col, just in (
        ("set", "left"),
        ("ok", "center"),
        ("median", "right"),
        ("±sem", "right"),
        ("n", "right"),
        ("floor", "right"),
        ("%roof", "right"),
        ("err/tol", "right"),
    ):
        t.add_column(col, justify=just, no_wrap=True)
    for s in r["shapes"]:
        tm = s.get("timing") or {}
        err = s.get("error") or {}
        e = err.get("tol_ratio", err.get("worst_residual_ratio"))
        t.add_row(
            compact_shape(s.get("params") or {}, s["shape"]),
            SET_SHORT.get(s["set"], s["set"]),
            "✓" if s["ok"] else Text("✗", style="red"),
            fmt_us(tm.get("median_us")),
            f"{tm.get('sem_pct') or 0:.2g}%" if tm else "",
            str(tm.get("n", "")) if tm else "",
            fmt_us(s.get("floor_us")),
            f"{s['roofline_pct']:.1f}" if s.get("roofline_pct") is not None else "",
            f"{e:.2g}" if isinstance(e, int | float) else "",
        )
    return t


def print_result(r: dict[str, Any], console: Console) -> None:
    console.print(result_table(r))
    status = r["status"]
    line = Text.assemble(("verdict: ", "bold"), (status, STATUS_STYLE.get(status, "bold")))
    if r.get("geomean_us"):
        line.append(f"   geomean {fmt_us(r['geomean_us'])}")
    if r.get("hidden_geomean_us"):
        line.append(f"   hidden {fmt_us(r['hidden_geomean_us'])}")
    if r.get("roofline_pct"):
        line.append(f"   {r['roofline_pct']:.1f}% of roofline")
    for name, s in (r.get("speedups") or {}).items():
        line.append(f"   {s:.2f}× vs {name}")
    console.print(line)
    for reason in r.get("reasons", []):
        where = f" [{reason['shape']}]" if reason.get("shape") else ""
        console.print(Text(f"  ✗ {reason['kind']}{where}: {reason['message']}", style="red"))
    for flag in r.get("flags", []):
        console.print(Text(f"  ! {flag}", style="yellow"))
    prof = r.get("profile") or {}
    if prof.get("launches") is not None:
        groups = ", ".join(f"{k} {v}" for k, v in prof.get("groups", {}).items())
        console.print(
            f"  profile: {prof['launches']} {prof.get('unit', 'launches')} per call ({groups})"
        )
    if r.get("protections"):
        console.print(
            Text(
                "  protections: " + ", ".join(f"{k}={v}" for k, v in r["protections"].items()),
                style="dim",
            )
        )
    if not r.get("comparable", True):
        console.print(
            Text("  times are not comparable (Triton interpreter on the CPU)", style="yellow")
        )
