"""Speedup of harness results over a baseline result, per shape: a table, JSON and an SVG chart.

    python bench/plot_speedups.py bench/results/h200-2026-11-30g/torch_geqrf-final.json \\
        bench/results/h200-2026-11-30e/call2/triton_fused-final-merged.json=session-5 \\
        bench/results/h200-2026-12-01h/parts/triton_fused-final-call5-merged.json=session-9 \\
        --target 50 --out bench/results/h200-2026-12-01h

Every file is a `cockpit eval ... --json` result (or a `cockpit merge` of parts) of one task; the
first is the baseline. Per shape of --set (benchmark: the scored specs) the speedup is the
baseline's mean over the result's mean, for the shapes both timed; the last group is the weighted
geometric mean, as the harness scores it. Writes speedups.json and speedups.svg under --out (a
hand-drawn SVG, log scale, no plotting dependency) and prints the table. RESULT=LABEL names a bar
series (default: the file's stem). --target draws a dashed line at that speedup.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cockpit.harness.shards import MergeError, load_result  # noqa: E402
from cockpit.harness.timing import geomean  # noqa: E402  (the harness's weighted score)

COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"]
DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


class PlotError(Exception):
    """A bad input: one line for the user, exit code 2."""


def load(spec: str) -> tuple[str, dict]:
    path, _, label = spec.partition("=")
    try:
        doc = load_result(Path(path))  # the checks `cockpit merge` makes of its parts
    except MergeError as exc:
        raise PlotError(str(exc)) from None
    return label or Path(path).stem, doc


def means(doc: dict, which: str) -> dict[str, tuple[float, float]]:
    """shape label -> (mean us, weight) for the timed shapes of one set."""
    out = {}
    for s in doc["shapes"]:
        timing = s.get("timing") or {}
        if s.get("set") == which and s.get("ok", True) and timing.get("mean_us"):
            out[s["shape"]] = (float(timing["mean_us"]), float(s.get("weight") or 1.0))
    return out


def short_label(label: str, show_dtype: bool) -> str:
    """'batch=20 n=32 cond=1 family=dense float32' -> 'dense 20×32'."""
    words = label.split()
    kv = dict(w.split("=", 1) for w in words if "=" in w)
    dims = [kv[k] for k in ("batch", "n", "rows", "cols") if k in kv]
    if not dims:
        return label[:24]
    parts = [kv["family"]] if "family" in kv else []
    parts.append("×".join(dims))
    dtype = next((DTYPES[w] for w in words if w in DTYPES), None)
    if show_dtype and dtype:
        parts.append(dtype)
    return " ".join(parts)


def order_key(label: str) -> tuple:
    """Shapes in size order: n (or cols), then batch (or rows), then the label."""
    kv = dict(w.split("=", 1) for w in label.split() if "=" in w)

    def num(*keys: str) -> int:
        return next((int(kv[k]) for k in keys if k in kv and kv[k].isdigit()), 0)

    return (num("n", "cols"), num("batch", "rows"), label)


def table(base: dict, results: list[tuple[str, dict]], which: str) -> tuple[list[str], dict]:
    """Shape labels (in size order) and label -> {shape: speedup, 'geomean': g}."""
    shapes = sorted(base, key=order_key)
    speed: dict[str, dict[str, float]] = {}
    for label, doc in results:
        m = means(doc, which)
        row = {s: base[s][0] / m[s][0] for s in shapes if s in m}
        if not row:
            raise PlotError(f"{label}: no {which} shape in common with the baseline")
        row["geomean"] = geomean([row[s] for s in row], [base[s][1] for s in row])
        speed[label] = row
    return shapes, speed


def svg(shapes: list[str], names: list[str], speed: dict, target: float | None, title: str) -> str:
    groups = [*names, "geomean"]
    series = list(speed)
    values = [v for row in speed.values() for v in row.values()] + ([target] if target else [])
    lo = 10 ** math.floor(math.log10(min(1.0, *values)))
    hi = 10 ** math.ceil(math.log10(max(values) * 1.05))
    w, h, left, top, bottom = 960, 460, 60, 40, 110
    plot_w, plot_h = w - left - 20, h - top - bottom
    gw = plot_w / len(groups)
    bw = gw * 0.8 / len(series)

    def y(v: float) -> float:
        return top + plot_h * (1 - (math.log10(v) - math.log10(lo)) / math.log10(hi / lo))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="14">{escape(title)}</text>',
    ]
    tick = lo
    while tick <= hi * 1.0001:
        for mult in (1, 2, 5):
            v = tick * mult
            if lo <= v <= hi:
                out.append(
                    f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                    f'stroke="#ddd"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                    f'text-anchor="end">{v:g}×</text>'
                )
        tick *= 10
    for gi, group in enumerate(groups):
        x0 = left + gi * gw + gw * 0.1
        key = "geomean" if group == "geomean" else shapes[gi]
        for si, name in enumerate(series):
            v = speed[name].get(key)
            if v is None:
                continue
            x = x0 + si * bw
            top_y, bottom_y = sorted((y(v), y(1.0)))  # from 1× up (faster) or down (slower)
            out.append(
                f'<rect class="bar" x="{x:.1f}" y="{top_y:.1f}" width="{bw * 0.95:.1f}" '
                f'height="{max(bottom_y - top_y, 0.5):.1f}" fill="{COLORS[si % len(COLORS)]}">'
                f"<title>{escape(name)} {escape(group)}: {v:.3g}×</title></rect>"
            )
        cx, cy = left + gi * gw + gw / 2, top + plot_h + 12
        size = 11 if len(groups) <= 16 else 9
        out.append(
            f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="end" font-size="{size}" '
            f'transform="rotate(-45 {cx:.1f} {cy:.1f})">{escape(group)}</text>'
        )
    if target:
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(target):.1f}" y2="{y(target):.1f}" '
            f'stroke="#c00" stroke-dasharray="6 4"/><text x="{left + plot_w}" '
            f'y="{y(target) - 4:.1f}" text-anchor="end" fill="#c00">target {target:g}×</text>'
        )
    for si, name in enumerate(series):
        lx = left + 10 + si * 180
        out.append(
            f'<rect x="{lx}" y="{top - 14}" width="10" height="10" '
            f'fill="{COLORS[si % len(COLORS)]}"/><text x="{lx + 14}" y="{top - 5}">'
            f"{escape(name)} ({speed[name]['geomean']:.1f}× geomean)</text>"
        )
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#888"/>')
    out.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" '
        f'stroke="#444"/>'
    )  # the baseline: bars above it are faster, below it slower
    out.append("</svg>")
    return "\n".join(out) + "\n"


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:  # a speedup line on a log scale
        raise argparse.ArgumentTypeError(f"{text}: must be > 0")
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("baseline", help="the result the others are compared with")
    p.add_argument("results", nargs="+", help="RESULT.json or RESULT.json=LABEL")
    p.add_argument("--set", default="benchmark", choices=["benchmark", "hidden"])
    p.add_argument("--target", type=positive, help="draw a line at this speedup")
    p.add_argument("--out", default="bench/results")
    args = p.parse_args(argv)
    try:
        base_label, base_doc = load(args.baseline)
        results = [load(r) for r in args.results]
        task = base_doc.get("task")
        for label, doc in results:
            if doc.get("task") != task:
                raise PlotError(f"{label} is a {doc.get('task')} result, the baseline {task}")
        base = means(base_doc, args.set)
        if not base:
            raise PlotError(f"{args.baseline} has no timed {args.set} shape")
        shapes, speed = table(base, results, args.set)
    except PlotError as exc:
        print(f"plot_speedups: {exc}", file=sys.stderr)
        return 2
    dtypes = {next((w for w in s.split() if w in DTYPES), None) for s in shapes}
    names = [short_label(s, len(dtypes) > 1) for s in shapes]
    width = max(len(n) for n in [*names, "geomean"])
    print(f"{'shape':{width}s} " + " ".join(f"{label[:14]:>14s}" for label in speed))
    for key, name in [*zip(shapes, names), ("geomean", "geomean")]:
        cells = [f"{speed[label][key]:13.2f}×" if key in speed[label] else f"{'-':>14s}"
                 for label in speed]  # fmt: skip
        print(f"{name:{width}s} " + " ".join(cells))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"task": task, "set": args.set, "baseline": base_label, "shapes": shapes,
           "labels": names, "speedups": speed}  # fmt: skip
    (out / "speedups.json").write_text(json.dumps(doc, indent=1))
    title = f"{task}: speedup over {base_label} per {args.set} shape (means, log scale)"
    (out / "speedups.svg").write_text(svg(shapes, names, speed, args.target, title))
    print(f"wrote {out / 'speedups.svg'} and {out / 'speedups.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
