"""One evaluation in parts: `cockpit eval … --shard K/N` verifies and times the K-th of N parts of
the hidden and benchmark shapes (part 1 also verifies the public ones), and `merge` combines the N
results into the one result an unsharded run would give: the union of the shapes, the worst
verdict, and the geometric means recomputed from the per-shape times and floors.

Why: a QR `--final` evaluation of a torch-level seed takes 10-15 minutes on one H200 (verify
~400 s, then up to 10 s of kernel time per timed shape); split over the GPUs of one host it fits
in a shorter slot. Each part runs in its own arena with its own secret seeds, so a part is
exactly as hard to fool as a whole evaluation, and a candidate that fails any shape of any part
fails the merge.

Merge refuses (MergeError, a usage error) anything that is not the N parts of one evaluation:
the same task, candidate text (sha256), mode, device and machine, every K from 1 to N once.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from cockpit.harness import scoring
from cockpit.harness.result import SEVERITY, sum_breakdowns


class MergeError(ValueError):
    """The files are not the parts of one sharded evaluation: one line, exit 2."""


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N) with 1 <= K <= N."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise MergeError(f"--shard {text}: expected K/N, e.g. 1/2") from None
    if not 1 <= k <= n:
        raise MergeError(f"--shard {text}: expected 1 <= K <= N")
    return k, n


def load_result(path: Path) -> dict[str, Any]:
    """An evaluation result (`cockpit eval --json`, or a merge of parts) from its file."""
    try:
        d = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise MergeError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MergeError(f"{path}: not a JSON evaluation result ({exc})") from None
    if not isinstance(d, dict) or "status" not in d or "shapes" not in d:
        raise MergeError(f"{path}: not an evaluation result (no status and shapes)")
    return d


def load_part(path: Path) -> dict[str, Any]:
    d = load_result(path)
    if not d.get("shard"):
        raise MergeError(f"{path}: not a part of a sharded evaluation (run eval with --shard K/N)")
    return d


def _check(parts: list[tuple[str, dict[str, Any]]]) -> int:
    name0, d0 = parts[0]
    for name, d in parts[1:]:
        for key in ("task", "candidate_sha256", "mode", "device", "timing"):
            if d.get(key) != d0.get(key):
                raise MergeError(
                    f"{name}: {key} {d.get(key)!r} differs from {name0}'s {d0.get(key)!r}"
                )
        m, m0 = d.get("env", {}).get("machine"), d0.get("env", {}).get("machine")
        if m != m0:
            raise MergeError(f"{name}: measured on {m!r}, {name0} on {m0!r}")
    seen: dict[int, str] = {}
    n = None
    for name, d in parts:
        k, nk = parse_shard(d["shard"])
        if n is not None and nk != n:
            raise MergeError(f"{name}: part {d['shard']} of a different split than {n} parts")
        n = nk
        if k in seen:
            raise MergeError(f"{name}: part {k}/{n} given twice (also {seen[k]})")
        seen[k] = name
    assert n is not None
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in seen]
    if missing:
        raise MergeError(f"part {', '.join(missing)} missing: give all {n} parts")
    return n


def merge(parts: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """parts: (name for messages, result dict) of every shard. Returns one result dict."""
    if not parts:
        raise MergeError("nothing to merge")
    _check(parts)
    parts = sorted(parts, key=lambda p: parse_shard(p[1]["shard"])[0])
    first = parts[0][1]
    out = copy.deepcopy(first)
    out["shard"] = None
    out["shards"] = [
        {
            "shard": d["shard"],
            "status": d["status"],
            "wall_s": d.get("wall_s"),
            "stage_s": d.get("stage_s", {}),
        }
        for _, d in parts
    ]
    rest = [s for _, d in parts for s in d["shapes"] if s["set"] != "public"]
    public = [s for s in first["shapes"] if s["set"] == "public"]
    # the judge's order: public, hidden, benchmark
    out["shapes"] = public + sorted(rest, key=lambda s: s["set"] == "benchmark")

    worst = max((d["status"] for _, d in parts), key=lambda st: SEVERITY.get(st, 5))
    out["status"] = worst
    reasons, flags = [], []
    for _, d in parts:
        reasons += [r for r in d.get("reasons", []) if r not in reasons]
        flags += [f for f in d.get("flags", []) if f not in flags]
    out["reasons"], out["flags"] = reasons, flags
    out["comparable"] = all(d.get("comparable", True) for _, d in parts)
    out["wall_s"] = max(d.get("wall_s") or 0.0 for _, d in parts)  # the parts run side by side
    stage: dict[str, float] = {}
    for _, d in parts:
        for k, v in (d.get("stage_s") or {}).items():
            stage[k] = round(stage.get(k, 0.0) + v, 3)
    out["stage_s"] = stage  # summed over the parts: device-seconds per stage
    out["breakdown_s"] = sum_breakdowns(d.get("breakdown_s") for _, d in parts)  # the same way
    census = [d["profile"] for _, d in parts if "launches" in (d.get("profile") or {})]
    out["profile"] = census[0] if census else first.get("profile", {})  # part 1 profiles
    _rescore(out, parts)
    return out


def _rescore(out: dict[str, Any], parts: list[tuple[str, dict[str, Any]]]) -> None:
    """The judge's `_score` over the merged shapes (means in final mode, medians otherwise)."""
    for key in ("geomean_us", "hidden_geomean_us", "score_us", "roofline_pct"):
        out[key] = None
    out["speedups"] = {}
    if out["status"] != "ok":
        return
    final = out.get("mode") == "final"
    bench, hidden = [], []
    for s in out["shapes"]:
        t = s.get("timing")
        if not t or s.get("floor_us") is None:
            continue
        us = t["mean_us"] if final else t["median_us"]
        (bench if s["set"] == "benchmark" else hidden).append((us, s["floor_us"], s["weight"]))

    def sc(rows: list[tuple[float, float, float]], col: int = 0) -> float:
        return scoring.score([r[col] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    if bench:
        out["geomean_us"] = sc(bench)
        out["roofline_pct"] = 100.0 * sc(bench, 1) / out["geomean_us"]
    if hidden:
        out["hidden_geomean_us"] = sc(hidden)
    if bench or hidden:
        out["score_us"] = sc(bench + hidden)
    # a part's speedup is baseline geomean / its own geomean: recover the baseline's geomean
    for _, d in parts:
        if d.get("geomean_us") and out["geomean_us"]:
            for name, sp in (d.get("speedups") or {}).items():
                out["speedups"].setdefault(name, sp * d["geomean_us"] / out["geomean_us"])
