"""The verifier's result record as compact text for a prompt.

What the agent needs to act on, and nothing it could game: load errors trimmed to the lines
that point at its code; failing shapes with their error sizes; integrity verdicts named by class
only (the message would teach it which check to dodge); per-shape times with hidden shapes shown
as "hidden #k" and never their parameters; the profiler census and the roofline line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

LOAD_KINDS = {"syntax", "missing_import", "import_error", "no_kernel"}
# Verdicts whose details stay with the human: the agent hears the class, not which check fired.
GENERIC = {
    "integrity": "the evaluation caught the kernel interfering with how it is checked or timed",
    "hidden_work": "work happened outside the timed call (caching across calls, background threads "
                   "or precomputed results); every call must compute its result from its inputs",
    "impossible_speed": "a time below the physical floor for the work: the kernel skipped work it must do",
    "static_rule": "the code uses a construct this task's rules forbid",
    "native_code": "native code may only compute: load_inline sources must be string constants "
                   "and may not use the Python C API or pybind11's eval/import, dynamic loading, "
                   "system calls, processes, files, /proc or the environment; no other native "
                   "loader is allowed",
    "out_of_bounds": "the kernel wrote outside its output buffers",
    "input_mutated": "the kernel modified an input tensor; inputs are read-only",
    "output_aliases_input": "an output shares memory with an input; return new tensors",
}
MAX_LOAD_LINES = 12
MAX_LINE = 240


def hidden_names(result: dict[str, Any]) -> dict[str, str]:
    """Hidden shape label -> "hidden #k" (k from 1, in the record's order)."""
    names: dict[str, str] = {}
    for s in result.get("shapes") or []:
        if s.get("hidden") or s.get("set") == "hidden":
            names.setdefault(str(s.get("shape", "")), f"hidden #{len(names) + 1}")
    return names


def scrub_hidden(text: str, labels: Iterable[str], numbers: Iterable[int] | None = None) -> str:
    """Remove hidden-shape labels (longest first); for text about a hidden shape (`numbers` given:
    its parameter values) also index lists and those values, which would reveal its size."""
    for label in sorted({x for x in labels if x}, key=len, reverse=True):
        text = text.replace(label, "a hidden shape")
    if numbers is None:
        return text
    text = re.sub(r"\b(rows?|cols?|columns?|index|elements?|batch|matrix|matrices)\s+\d+", r"\1 …", text)
    text = re.sub(r"torch\.Size\(\[[^\]]*\]\)|\[(\s*\d+\s*,)*\s*\d+\s*\]", "[…]", text)
    for n in sorted({n for n in numbers if n >= 2}, key=lambda n: -len(str(n))):
        text = re.sub(rf"(?<![\w.]){n}(?![\w.])", "N", text)
    return text


def render_feedback(result: dict[str, Any] | None, *, hidden_labels: Iterable[str] = (),
                    title: str = "Evaluation") -> str:
    if not result:
        return f"{title}: none yet (this code has not been evaluated)."
    status = result.get("status", "?")
    names = hidden_names(result)
    labels = set(hidden_labels) | set(names)
    numbers = {v for s in result.get("shapes") or [] if s.get("hidden")
               for v in (s.get("params") or {}).values() if isinstance(v, int) and not isinstance(v, bool)}
    lines = [f"{title}: {status}" + _score_line(result)]
    if result.get("tier") == "screened" and status == "ok":
        why = (result.get("promotion") or {}).get("why", "")
        lines.append(f"  screened only (short timing, cheap shapes): {why}")
    if status == "duplicate":
        lines += [f"  {r.get('message', '')}" for r in result.get("reasons", [])]
        return "\n".join(lines)
    problems = _problems(result, names, labels, numbers)
    if problems:
        lines.append("Problems:")
        lines += [f"  - {p}" for p in problems]
    shapes = _shape_lines(result, names)
    if shapes:
        lines.append("Shapes (median time per call):")
        lines += shapes
    lines += _profile_lines(result.get("profile") or {})
    if status in ("crash", "load_error") and result.get("log_tail"):
        tail = _trim_traceback(scrub_hidden(str(result["log_tail"]), labels, numbers), 8)
        if tail:
            lines.append("Output before it stopped:")
            lines += [f"  {ln}" for ln in tail]
    if result.get("comparable") is False:
        lines.append("Note: times come from the Triton interpreter on a CPU; they check correctness, "
                     "they do not rank speed.")
    return "\n".join(lines)


def _score_line(r: dict[str, Any]) -> str:
    parts = []
    if r.get("score_us") is not None:
        parts.append(f"score {_us(r['score_us'])} (geometric mean of timed shapes; lower is better)")
    if r.get("geomean_us") is not None:
        parts.append(f"benchmark {_us(r['geomean_us'])}")
    if r.get("hidden_geomean_us") is not None:
        parts.append(f"hidden {_us(r['hidden_geomean_us'])}")
    if r.get("roofline_pct") is not None:
        parts.append(f"{r['roofline_pct']:.1f}% of roofline")
    for name, x in (r.get("speedups") or {}).items():
        if isinstance(x, int | float):
            parts.append(f"{x:.2f}x vs {name}")
    return (", " + ", ".join(parts)) if parts else ""


def _problems(r: dict[str, Any], names: dict[str, str], labels: set[str], numbers: set[int]) -> list[str]:
    out: list[str] = []
    by_label = {str(s.get("shape")): s for s in r.get("shapes") or []}
    for reason in r.get("reasons") or []:
        kind = str(reason.get("kind", "?"))
        shape = str(reason.get("shape") or "")
        msg = str(reason.get("message") or "")
        hidden = shape in names or shape in labels
        where = f" on {names.get(shape, 'a hidden shape') if hidden else shape}" if shape else ""
        if kind in GENERIC:
            out.append(f"{kind}{where}: {GENERIC[kind]}")
        elif kind in LOAD_KINDS:
            body = _trim_traceback(msg, MAX_LOAD_LINES)
            out.append(f"{kind}: " + ("\n      ".join(body) if body else "(no message)"))
        elif hidden:
            err = _error_sizes((by_label.get(shape) or {}).get("error") or {})
            text = err or scrub_hidden(_first_line(msg), labels, numbers)
            out.append(f"{kind}{where}: {text}")
        else:
            out.append(f"{kind}{where}: {_clip(scrub_hidden(msg, labels), 600)}")
    return out


def _error_sizes(err: dict[str, Any]) -> str:
    """Sizes of the error without where it happened (an index would reveal a hidden size)."""
    parts = []
    if isinstance(err.get("tol_ratio"), int | float):
        parts.append(f"worst error {err['tol_ratio']:.3g}x the tolerance")
    for key, label in (("max_abs_err", "max abs err"), ("max_rel_err", "max rel err")):
        if isinstance(err.get(key), int | float):
            parts.append(f"{label} {err[key]:.3g}")
    if err.get("bad"):
        parts.append(f"{err['bad']} values out of tolerance")
    if err.get("nonfinite"):
        parts.append(f"{err['nonfinite']} NaN/Inf values")
    for key, v in err.items():
        if key in ("tol_ratio", "max_abs_err", "max_rel_err", "bad", "nonfinite", "where", "got", "want", "message"):
            continue
        if isinstance(v, int | float) and not isinstance(v, bool):
            parts.append(f"{key} {v:.3g}")
    return ", ".join(parts)


HOST_BOUND = "host-bound: "  # the judge's flag, "host-bound: SHAPE: ..."


def _shape_lines(r: dict[str, Any], names: dict[str, str]) -> list[str]:
    out = []
    host_bound = {f[len(HOST_BOUND):].split(": ", 1)[0] for f in r.get("flags") or []
                  if isinstance(f, str) and f.startswith(HOST_BOUND)}
    public = [s for s in r.get("shapes") or [] if s.get("set") == "public"]
    if public:
        ok = sum(1 for s in public if s.get("ok"))
        out.append(f"  public: {ok}/{len(public)} verified (public shapes are checked, not timed)")
        out += [f"    ✗ {s.get('shape')}" for s in public if not s.get("ok")]
    for s in r.get("shapes") or []:
        if s.get("set") == "public":
            continue
        hidden = s.get("hidden") or s.get("set") == "hidden"
        label = names.get(str(s.get("shape")), "hidden") if hidden else f"{s.get('set', '')}: {s.get('shape')}"
        timing = s.get("timing") or {}
        if not s.get("ok"):
            state = "✗ failed"
        elif timing.get("median_us") is not None:
            state = f"✓ {_us(timing['median_us'])}"
            if s.get("roofline_pct") is not None:
                state += f", {s['roofline_pct']:.0f}% of roofline"
            if s.get("bound"):
                state += f" ({s['bound']}-bound)"
            if str(s.get("shape")) in host_bound:
                state += (
                    "; host-bound: the host spends longer per call (launching, or waiting on the "
                    "GPU) than the GPU runs it"
                )
        else:
            state = "✓ verified, not timed"
        out.append(f"  {label}: {state}")
    return out


def _profile_lines(p: dict[str, Any]) -> list[str]:
    out = []
    if p.get("launches") is not None:
        groups = ", ".join(f"{k} {v}" for k, v in (p.get("groups") or {}).items())
        top = "; ".join(f"{str(k.get('name', '?'))[:60]} {_us(k.get('us'))} x{k.get('calls', 1)}"
                        for k in (p.get("top") or [])[:5])
        out.append(f"Profile: {p['launches']} {p.get('unit', 'launches')} per call" + (f" ({groups})" if groups else ""))
        if top:
            out.append(f"  top: {top}")
    if p.get("graphs") is not None or p.get("graph_breaks"):
        breaks = p.get("graph_breaks") or []
        line = f"torch.compile: {p.get('graphs', '?')} graphs, {p.get('graph_break_count', len(breaks))} graph breaks"
        out.append(line + (": " + "; ".join(str(b)[:160] for b in breaks[:3]) if breaks else ""))
    return out


def _trim_traceback(text: str, keep: int) -> list[str]:
    """The lines that matter: the candidate's frames and the error, not the harness's frames."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    kept: list[str] = []
    skip_next = False
    for ln in lines:
        if skip_next:
            skip_next = False
            continue
        if re.search(r'File "[^"]*(cockpit/harness|site-packages|<frozen)', ln):
            skip_next = True  # the frame's source line goes with it
            continue
        ln = re.sub(r'File "[^"]*?([\w-]+\.py)"', r'File "\1"', ln)
        kept.append(_clip(ln, MAX_LINE))
    return kept[-keep:]


def _first_line(text: str) -> str:
    return _clip(next((ln for ln in text.splitlines() if ln.strip()), ""), 300)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _us(x: Any) -> str:
    if not isinstance(x, int | float):
        return "?"
    if x >= 1000:
        return f"{x / 1000:.3g} ms"
    return f"{x:.3g} us"
