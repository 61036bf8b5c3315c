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


def collapse_flags(flags: list[str], keep: int = 3) -> list[str]:
    """The judge's flags with each kind ("host-bound: SHAPE: ...") shown `keep` times at most,
    then one line that counts the rest: a torch-level QR seed gets one per shape (41 in a final)."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for flag in flags:
        kind = str(flag).split(": ", 1)[0]
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= keep:
            out.append(str(flag))
    for kind, n in seen.items():
        if n > keep:
            out.append(f"{kind}: … and {n - keep} more shape{'s' * (n - keep != 1)}")
    return out


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def fmt_rate(rate: float | None, unit: str) -> str:
    """`2,345 tok/s` (thousands separated), `12.3 tok/s` below 100; `-` when there is no time."""
    if rate is None:
        return "-"
    return f"{rate:,.0f} {unit}" if rate >= 100 else f"{rate:.3g} {unit}"


def report_rate(r: dict[str, Any], time_us: float | None) -> str:
    """The task's throughput at `time_us` per call (result `report`: unit, per_call), or ''."""
    rep = r.get("report") or {}
    if not rep.get("unit") or not time_us or time_us <= 0:
        return ""
    return fmt_rate(float(rep.get("per_call") or 1.0) * 1e6 / time_us, rep["unit"])


DTYPE_SHORT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}
SET_SHORT = {"public": "pub", "hidden": "hid", "benchmark": "bench"}


def compact_shape(params: dict[str, Any], fallback: str) -> str:
    """`16×512×2 dense f32` instead of `batch=16 n=512 cond=2 family=dense float32`."""
    if not params:
        return fallback
    numeric = {k: v for k, v in params.items() if k != "dtype" and isinstance(v, int | float)}
    # more than 4 numbers (a model config: layers, dim, heads, ...) would be unreadable bare
    head = (
        " ".join(f"{k}={v}" for k, v in numeric.items())
        if len(numeric) > 4
        else "×".join(str(v) for v in numeric.values())
    )
    words = [str(v) for k, v in params.items() if k != "dtype" and not isinstance(v, int | float)]
    dtype = DTYPE_SHORT.get(str(params.get("dtype", "")), str(params.get("dtype", "")))
    return " ".join(x for x in [head, *words, dtype] if x)


def result_table(r: dict[str, Any]) -> Table:
    t = Table(
        title=f"{r['task']} · {r['candidate']} · {r['device']} · {r['mode']}", title_justify="left"
    )
    # model configs (more than 4 numeric keys, shown as key=value) wrap instead of crowding out
    # the numbers
    wide = any(
        sum(k != "dtype" and isinstance(v, int | float) for k, v in (s.get("params") or {}).items())
        > 4
        for s in r["shapes"]
    )
    t.add_column("shape", no_wrap=not wide, max_width=34 if wide else None)
    unit = (r.get("report") or {}).get("unit")
    # the host's time per call beside the GPU's (GPU runs): the launch slack keeps host time out
    # of the median, up to 2 ms, so a host-heavy candidate must show it here (on the CPU the
    # median is host time already)
    host = not str(r.get("device", "")).startswith("cpu") and any(
        (s.get("timing") or {}).get("submit_median_us") is not None for s in r["shapes"]
    )
    for col, just in (
        ("set", "left"),
        ("ok", "center"),
        ("median", "right"),
        *([(unit, "right")] if unit else []),
        *([("host", "right")] if host else []),
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
            *([report_rate(r, tm.get("median_us")).removesuffix(f" {unit}")] if unit else []),
            *([fmt_us(tm.get("submit_median_us")) if tm else ""] if host else []),
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
        if rate := report_rate(r, r["geomean_us"]):
            line.append(f" ({rate})")
    if r.get("hidden_geomean_us"):
        line.append(f"   hidden {fmt_us(r['hidden_geomean_us'])}")
        if rate := report_rate(r, r["hidden_geomean_us"]):
            line.append(f" ({rate})")
    if r.get("roofline_pct"):
        line.append(f"   {r['roofline_pct']:.1f}% of roofline")
    for name, s in (r.get("speedups") or {}).items():
        line.append(f"   {s:.2f}× vs {name}")
    console.print(line)
    if r.get("timing") == "end_to_end":
        console.print(
            "  timed end to end: each call's wall time to the device synchronize after it "
            "(host and GPU), as a user's loop sees it"
        )
    if r.get("tier") in ("screened", "promoted"):
        why = (r.get("promotion") or {}).get("why", "")
        console.print(f"  {r['tier']}{': ' + why if why else ''}")
    if r.get("shard"):
        console.print(
            f"  part {r['shard']} of a sharded evaluation: `cockpit merge` the parts for the verdict"
        )
    if r.get("shards"):
        walls = ", ".join(
            f"{p['shard']} {p['status']} {p.get('wall_s') or 0:.0f} s" for p in r["shards"]
        )
        console.print(f"  merged from {len(r['shards'])} parts ({walls})")
    for reason in r.get("reasons", []):
        where = f" [{reason['shape']}]" if reason.get("shape") else ""
        console.print(Text(f"  ✗ {reason['kind']}{where}: {reason['message']}", style="red"))
    for flag in collapse_flags(r.get("flags") or []):
        console.print(Text(f"  ! {flag}", style="yellow"))
    prof = r.get("profile") or {}
    if prof.get("launches") is not None:
        groups = ", ".join(f"{k} {v}" for k, v in prof.get("groups", {}).items())
        graphs = ""
        if prof.get("graphs") is not None:  # torch.compile candidates: dynamo's graphs and breaks
            n, b = prof["graphs"], prof.get("graph_break_count", 0)
            graphs = f"; {n} graph{'s' * (n != 1)}, {b} graph break{'s' * (b != 1)}"
        console.print(
            f"  profile: {prof['launches']} {prof.get('unit', 'launches')} per call ({groups}){graphs}"
        )
        for reason in prof.get("graph_breaks", [])[:5]:
            console.print(Text(f"    graph break: {reason}", style="dim"))
    if where := where_time_went(r):
        console.print(Text(f"  where the time went: {where}", style="dim"))
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


def where_time_went(r: dict[str, Any]) -> str:
    """One line from `breakdown_s`: what the verify and time stages spent on the candidate's own
    calls, on checking, and on everything else (making inputs, moving tensors between the
    processes, guards, warm-up). Empty when the result has no breakdown."""
    b = r.get("breakdown_s") or {}
    stage = r.get("stage_s") or {}
    parts = []
    v = b.get("verify")
    if v:
        cand, check = v.get("arena_candidate", 0.0), v.get("check", 0.0)
        rest = max(0.0, stage.get("verify", 0.0) - cand - check)
        parts.append(
            f"verify {stage.get('verify', 0.0):.1f} s = candidate {cand:.1f}, checks "
            f"{check:.1f}, inputs/transfers/guards {rest:.1f}"
        )
    t = b.get("time")
    if t:
        loop, check = t.get("arena_loop", 0.0), t.get("check", 0.0)
        clock = t.get("judge_clock", 0.0)
        warm = max(0.0, t.get("arena", 0.0) - loop)
        rest = max(0.0, stage.get("time", 0.0) - loop - warm - check - clock)
        clocked = f", judge's clock {clock:.1f}" if clock else ""
        parts.append(
            f"time {stage.get('time', 0.0):.1f} s = sampling {loop:.1f}, warm-up {warm:.1f}, "
            f"checks {check:.1f}{clocked}, inputs/transfers {rest:.1f}"
        )
    null = (b.get("load") or {}).get("judge_clock")
    if null:
        parts.append(f"load: null bursts {null:.1f} s")
    return "; ".join(parts)
