"""The typed evaluation record. Everything the loop, the TUI and the agent see comes from here.

Statuses (exit code 0 only for `ok`):
  ok          verified on every public and hidden shape, and timed
  load_error  the file does not load: syntax, missing import, no `kernel`, import-time crash
  wrong       it ran but an output is wrong (numbers, NaN/Inf, shape, dtype, strides, stale cache)
  rejected    it broke a rule: forbidden call, integrity (timers, checkers, flags, threads,
              hidden work, exit), input mutation or aliasing, out-of-bounds write, impossible speed
  timeout     over the time limit (kind `too_slow`)
  crash       the process died: segfault, CUDA error, out of memory
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

STATUSES = ("ok", "load_error", "wrong", "rejected", "timeout", "crash")

# Reason kinds, grouped by the status they imply. The agent gets `kind` and `message`; the human
# can filter on `kind`.
KINDS: dict[str, str] = {
    "syntax": "load_error",
    "missing_import": "load_error",
    "import_error": "load_error",
    "no_kernel": "load_error",
    "numerical": "wrong",
    "nan_inf": "wrong",
    "bad_type": "wrong",
    "bad_shape": "wrong",
    "bad_dtype": "wrong",
    "bad_device": "wrong",
    "bad_strides": "wrong",
    "stale_output": "wrong",
    "overflow": "wrong",
    "exception": "wrong",
    "forbidden_call": "rejected",
    "static_rule": "rejected",
    "native_code": "rejected",
    "input_mutated": "rejected",
    "output_aliases_input": "rejected",
    "out_of_bounds": "rejected",
    "integrity": "rejected",
    "hidden_work": "rejected",
    "impossible_speed": "rejected",
    "too_slow": "timeout",
    "crash": "crash",
    "oom": "crash",
}
SEVERITY = {"crash": 5, "timeout": 4, "rejected": 3, "load_error": 2, "wrong": 1, "ok": 0}


@dataclass
class Reason:
    kind: str
    message: str
    stage: str = ""
    shape: str = ""  # described shape; hidden shapes are named "hidden #k" to the agent

    @property
    def status(self) -> str:
        return KINDS.get(self.kind, "rejected")

    def line(self) -> str:
        where = f" [{self.shape}]" if self.shape else ""
        return f"{self.kind}{where}: {self.message}"


@dataclass
class TimingStats:
    n: int
    mean_us: float
    sem_pct: float
    median_us: float
    p10_us: float
    p90_us: float
    min_us: float
    max_us: float
    total_ms: float
    host_median_us: float = 0.0
    graph_median_us: float | None = None  # CUDA-graph replay time, labelled separately
    # host time inside the call until it returned (launching): above the GPU time, calls back to
    # back would run at the host's pace (a review flag; the slack keeps it out of the timing)
    submit_median_us: float | None = None
    # the share of timed calls that returned after the launch slack had run out (GPU only): the
    # clock was running while the host still submitted, so host time can be inside them
    late_pct: float | None = None
    # the launch slack's median length on the GPU (its hold follows the host's submit times)
    slack_median_us: float | None = None
    # end-to-end timing on a GPU: the median GPU time of the calls (CUDA events), beside the
    # wall time the median is made of; None for kernel timing, where the median is the GPU time
    gpu_median_us: float | None = None
    stop: str = ""  # which stopping rule ended the loop
    # the judge's own clock over bursts of calls (judge_clock.py): the real time per call it
    # bounds, that over the median, and the calls per burst
    judge_us: float | None = None
    judge_ratio: float | None = None
    judge_k: int | None = None


@dataclass
class ShapeResult:
    shape: str
    set: str  # public | hidden | benchmark
    hidden: bool
    ok: bool
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    error: dict[str, Any] = field(default_factory=dict)  # worst error sizes from the check
    timing: TimingStats | None = None
    floor_us: float | None = None
    roofline_pct: float | None = None
    bound: str = ""  # memory | compute | latency
    # where the judge's wall time went for this shape, per stage (verify, time): seconds in
    # making inputs, the round trip to the arena, the arena's own part of it, the candidate's
    # calls, reading outputs back and checking them. Informational: it says why an evaluation is
    # slow (the loop's throughput), and is never part of a verdict or a score.
    breakdown_s: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def median_us(self) -> float | None:
        return self.timing.median_us if self.timing else None


def sum_breakdowns(items: Any) -> dict[str, dict[str, float]]:
    """`breakdown_s` dicts ({stage: {part: seconds}}) added up: the shapes of one result, or the
    parts of a sharded evaluation."""
    out: dict[str, dict[str, float]] = {}
    for b in items:
        for stage, parts in (b or {}).items():
            total = out.setdefault(stage, {})
            for key, v in parts.items():
                total[key] = round(total.get(key, 0.0) + v, 3)
    return out


@dataclass
class Result:
    task: str
    candidate: str
    device: str
    status: str = "ok"
    reasons: list[Reason] = field(default_factory=list)
    shapes: list[ShapeResult] = field(default_factory=list)
    geomean_us: float | None = None  # benchmark shapes, weighted, floored
    hidden_geomean_us: float | None = None  # timed hidden shapes, floored
    score_us: float | None = None  # all timed shapes: what the loop ranks by
    speedups: dict[str, float] = field(default_factory=dict)
    roofline_pct: float | None = None
    comparable: bool = True  # False for Triton-interpreter times on the CPU
    profile: dict[str, Any] = field(default_factory=dict)
    protections: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # review notes that are not failures
    mode: str = "iterate"
    baseline_exempt: bool = False
    wall_s: float = 0.0
    stage_s: dict[str, float] = field(default_factory=dict)  # seconds per judge stage
    # the shapes' breakdown_s summed: where the verify and time stages' seconds went
    breakdown_s: dict[str, dict[str, float]] = field(default_factory=dict)
    log_tail: str = ""
    env: dict[str, Any] = field(default_factory=dict)
    # the task's `[report]` (unit, per_call), e.g. {"unit": "tok/s", "per_call": 1.0}: views show
    # per_call * 1e6 / time next to times; empty for tasks without one (and older records)
    report: dict[str, Any] = field(default_factory=dict)
    # how the calls were timed (the task's `timing`): "kernel", the GPU time of the call alone
    # behind a hold; "end_to_end", the wall time of the call to the synchronize after it
    timing: str = "kernel"
    candidate_sha256: str = ""  # of the text that was scanned and run
    shard: str | None = None  # "k/n" for one part of a sharded evaluation (judge.Options.shard)
    shards: list[dict[str, Any]] = field(default_factory=list)  # a merge's parts (harness.shards)
    # full: every shape, the whole protocol (`cockpit eval`). The loop's cascade gives
    # screened (the screen tier and a short timing only: never a branch's best) or promoted
    # (screened, then everything a full evaluation checks). `promotion` says why.
    tier: str = "full"
    promotion: dict[str, Any] = field(default_factory=dict)

    def fail(self, kind: str, message: str, stage: str = "", shape: str = "") -> None:
        reason = Reason(kind, message, stage, shape)
        self.reasons.append(reason)
        if SEVERITY[reason.status] > SEVERITY[self.status]:
            self.status = reason.status

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return _clean(d)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        d = dict(d)
        d["reasons"] = [Reason(**r) for r in d.get("reasons", [])]
        shapes = []
        for s in d.get("shapes", []):
            s = dict(s)
            if s.get("timing"):
                s["timing"] = TimingStats(**s["timing"])
            shapes.append(ShapeResult(**s))
        d["shapes"] = shapes
        return cls(**d)


def _clean(obj: Any) -> Any:
    """JSON has no NaN/Inf; they become None so every consumer can parse the record."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj
