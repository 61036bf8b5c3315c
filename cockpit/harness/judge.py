"""The judge: runs one evaluation of one candidate and returns the typed `Result`.

The judge holds everything secret: the task's reference, its hidden shapes and fresh random
seeds. It generates inputs, hands them to the candidate's process (`arena.py`) as tensors, and
checks every output itself, in float64, in its own process. The candidate never sees a checker
it could patch, and nothing it prints is ever parsed.

Stages: load (static rules, import) -> verify (public, then hidden, then benchmark shapes; poison,
guard bands, mutation/aliasing/perturbation, forbidden-op watch, integrity snapshot) -> time
(fresh inputs every call, flush, events + host clock, SEM stopping rule, spot-checked outputs)
-> profile (kernel census) -> score (floors, floored geomean, speedups, impossible-speed gate).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import random
import secrets
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from cockpit.harness import DEFAULT_EXCHANGE, baselines, judge_clock, scoring, warm, wire
from cockpit.harness.channel import ArenaDied, ArenaOOM, ArenaTimeout, Channel, ProtocolViolation
from cockpit.harness.protocol import (
    ArenaTaskConfig,
    BurstReply,
    BurstRequest,
    BurstRevealReply,
    CompareReply,
    CompareRequest,
    LoadBReply,
    LoadReply,
    NullBurstReply,
    NullBurstRequest,
    ProfileReply,
    ProfileRequest,
    Reply,
    Request,
    SetupReply,
    TimeReply,
    TimeRequest,
    VerifyReply,
    VerifyRequest,
)
from cockpit.harness.result import Result, ShapeResult, TimingStats, sum_breakdowns
from cockpit.harness.static_scan import scan
from cockpit.harness.task import Shape, Task
from cockpit.harness.timing import (
    LAUNCH_SLACK_US,
    PRESETS,
    Policy,
    compare_interleaved,
    summarize,
)
from cockpit.harness.verify import expected_meta, load_reference, run_check
from cockpit.harness.wire import WireError

Progress = Callable[[str, str, int, int], None]  # (stage, detail, done, total)


@dataclass(frozen=True)
class CallLimit:
    """How long one request may run: `seconds`, plus `allowance_s` if it compiles."""

    what: str  # the shape, as verdicts name it
    seconds: float
    allowance_s: float = 0.0


INT32_LIMIT = 2**31


class CandidateError(ValueError):
    """The candidate path itself is unusable (missing, unreadable): a usage error, exit 2."""


@dataclass
class Options:
    device: str = "cpu"
    mode: str = "iterate"  # iterate | final | quick
    policy: Policy | None = None
    sandbox: bool = True
    static: bool = True  # tests switch it off to exercise the dynamic defenses alone
    profile: bool = True
    time_limit_s: float | None = None
    memory_bytes: int | None = None
    strict: bool = False
    verify_untimed: bool = (
        True  # verify-only hidden shapes (the >2**31-element ones); benches may skip
    )
    progress: Progress | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # (k, n): verify and time only the k-th of n parts of the hidden and benchmark shapes (part 1
    # also verifies the public ones); `shards.merge` combines the n results into one. A long
    # `--final` run then spreads over n GPUs.
    shard: tuple[int, int] | None = None
    # how tensors cross between the judge and the arena: "memfd" (two sealed shared-memory
    # regions faulted in once per evaluation; wire.Region) or "files" (one file per tensor in a
    # /dev/shm folder). Same checks either way; memfd, the faster, is the default
    # (cockpit.harness.DEFAULT_EXCHANGE, docs/decisions/0012-memfd-exchange.md).
    exchange: str = DEFAULT_EXCHANGE
    # The cascade (the loop's evaluation): verify the shapes of the `screen` tier and time them
    # briefly; only a candidate that could beat `incumbent` (the branch best's result, a dict
    # as `Result.to_dict` makes it) is promoted to the rest: the `promote` tier's shapes, the
    # full timing and the profile. `Result.tier` says which it got. Off: everything, as always.
    cascade: bool = False
    incumbent: dict[str, Any] | None = None
    # promoted when its screened times are at most this much slower than the incumbent's on the
    # same shapes. A new best must be 3% faster (engine.beam.MIN_GAIN); 1% leaves room for the
    # short timing's noise (repeated evaluations of one seed agree to 0.3% on an H200)
    promote_margin: float = 0.01
    # keep an arena set up for the next evaluation in this process (an engine worker)
    warm: bool = False
    # per-call limits (seconds), overriding the task's `[limits]`
    limits: dict[str, float] | None = None
    # the judge's own clock over bursts of calls, against the times the arena reports
    # (judge_clock.py): a forged median is rejected, every reading recorded on the shape
    judge_clock: bool = True


# Calls this short on the GPU are launch-latency territory for every candidate (a single Triton
# launch costs ~20 us of Python): no host-bound flag below it.
HOST_BOUND_MIN_US = 20.0
# ... unless the host time per call is past the arena's base launch slack: no launch needs that,
# and the hold stretches to cover it (docs/decisions/0017-hold-length-follows-the-host.md), so a
# tiny GPU time beside it is host work the clock did not see (compute on the CPU while the GPU
# was held).
HOST_SLACK_US = LAUNCH_SLACK_US
# A shape whose timed calls return after their launch slack has run out more often than this
# (percent) is flagged: its samples hold host time, so its median reads the host's speed rather
# than the kernel's (docs/decisions/0017-hold-length-follows-the-host.md).
LATE_FLAG_PCT = 5.0


def host_bound(label: str, stats: TimingStats) -> str | None:
    """The flag for a shape whose calls take longer on the host than on the GPU (launching, or
    waiting inside the call), where that is not just a launch: GPU time of HOST_BOUND_MIN_US or
    more, or host time past HOST_SLACK_US. None otherwise."""
    sub = stats.submit_median_us
    if sub is None or sub <= stats.median_us:
        return None
    if stats.median_us < HOST_BOUND_MIN_US and sub <= HOST_SLACK_US:
        return None
    return (
        f"host-bound: {label}: {sub:.0f} us on the host per call (launching it, or "
        f"waiting inside it for the GPU) against {stats.median_us:.0f} us on the GPU; "
        "back to back, calls would run at the host's pace"
    )


def slack_overrun(label: str, stats: TimingStats, slack_us: float) -> str | None:
    """The flag for a shape whose timed calls often returned after their launch slack had run
    out (more than LATE_FLAG_PCT of them), or None: in those calls the clock started while the
    host was still submitting, so host time is inside their samples."""
    if stats.late_pct is None or stats.late_pct <= LATE_FLAG_PCT:
        return None
    return (
        f"slack-overrun: {label}: {stats.late_pct:.0f}% of timed calls returned after the "
        f"{slack_us:.0f} us launch slack had run out (host {stats.submit_median_us or 0:.0f} us "
        "per call, median): host time is inside those samples; a cheaper host path (fewer "
        "launches) would time true"
    )


def host_excess(reply: dict[str, Any], samples: list[float], host: list[float]) -> float:
    """The median host time of a timed call beyond its timed stream and its launch slack: large
    when work runs outside the timed stream (`hidden_work`). The slack is each call's own (the
    arena's `slacks`: the hold's length follows the host's submit times), else the op's
    measured flush cost (`flush_us`: the sleep, or the hold before the adaptive length)."""
    flush = float(reply.get("flush_us", 0.0))
    beyond = reply.get("slacks") or []
    if len(beyond) != len(samples):
        beyond = [flush] * len(samples)
    return statistics.median([h - e - float(b) for h, e, b in zip(host, samples, beyond)])


class _Stop(Exception):
    """End the evaluation early; the verdict is already in the result."""


def is_baseline(task: Task, source: str) -> bool:
    digest = hashlib.sha256(source.encode()).hexdigest()
    for name in task.baseline_seeds:
        p = task.seeds_dir / name
        if p.is_file() and hashlib.sha256(p.read_bytes()).hexdigest() == digest:
            return True
    return False


def evaluate(
    task: Task,
    candidate: str | Path,
    opts: Options | None = None,
    *,
    exempt: bool = False,
    source: str | None = None,
) -> Result:
    opts = opts or Options()
    path = Path(candidate)
    if source is None:
        try:
            source = path.read_text()
        except FileNotFoundError:
            raise CandidateError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CandidateError(f"{path}: cannot read ({exc})") from None
    return _Evaluation(task, path, source, opts, exempt or is_baseline(task, source)).run()


class _Evaluation:
    def __init__(self, task: Task, path: Path, source: str, opts: Options, exempt: bool) -> None:
        self.task, self.path, self.source, self.opts = task, path, source, opts
        self.device = opts.device
        self.judge_device = torch.device(opts.device)
        self.policy = opts.policy or PRESETS[opts.mode if opts.mode in PRESETS else "iterate"]
        self.res = Result(
            task=task.name,
            candidate=str(path),
            device=opts.device,
            mode=opts.mode,
            baseline_exempt=exempt,
            report=task.report.to_dict() if task.report else {},
            timing=task.timing,
            candidate_sha256=hashlib.sha256(source.encode()).hexdigest(),
            shard=f"{opts.shard[0]}/{opts.shard[1]}" if opts.shard else None,
        )
        self.exempt = exempt
        self.limit = opts.time_limit_s or task.time_limit_s
        self.deadline = 0.0
        self.ch: Channel | None = None
        self.ex: Path | None = None
        self.tx: Any = None  # the exchange (wire.Files or wire.Region): to the arena
        self.rx: Any = None  # ... and from it
        self.in_call = False
        self.arena: warm.Started | None = None
        self.arena_how = ""
        self.call_limit: tuple[str, float] | None = None  # the open request's own limit, if any
        self.called: set[str] = set()  # shapes the candidate was called on in this arena
        self.uses_triton = False  # the candidate imported Triton (the load's reply says)
        # per timed shape, before the load: the fastest null burst (us) at each length of its ladder
        self.null_us: dict[str, dict[int, float]] = {}
        self.calibrate_s = 0.0  # wall seconds of the null bursts (breakdown_s["load"])
        self.host_extra: dict[str, float] = {}  # per timed shape on a GPU: `host_excess`
        self.call_shape = ""  # the shape the open burst runs on
        self.commits: tuple[int, int, list[float]] = (0, 0, [])  # the last burst's seeds, replies
        per_shape = baselines.load(task, opts.device).get("reference", {}).get("per_shape", {})
        self.ref_times: dict[str, float] = {
            k: float(v) for k, v in per_shape.items() if isinstance(v, int | float) and v > 0
        }
        self._stage, self._stage_t0 = "load", time.monotonic()
        self.stage = "load"

    @property
    def stage(self) -> str:
        return self._stage

    @stage.setter
    def stage(self, name: str) -> None:
        """Entering a stage closes the previous one: `result.stage_s` says where the time went."""
        now = time.monotonic()
        spent = self.res.stage_s
        spent[self._stage] = round(spent.get(self._stage, 0.0) + now - self._stage_t0, 3)
        self._stage, self._stage_t0 = name, now

    def _progress(self, detail: str, done: int, total: int) -> None:
        if self.opts.progress:
            self.opts.progress(self.stage, detail, done, total)

    # --- driver ---------------------------------------------------------------------------------
    def run(self) -> Result:
        t0 = time.monotonic()
        self.deadline = t0 + self.limit
        res = self.res
        if self.opts.static and not self.exempt:
            findings = scan(self.source, self.task.forbidden)
            for f in findings:
                res.fail(
                    f.kind,
                    f"line {f.line}: {f.message}" if f.kind != "syntax" else f.message,
                    stage="load",
                )
            if findings:
                res.wall_s = time.monotonic() - t0
                return res
        ref = load_reference(self.task)
        mem = self.mem
        try:
            # run exactly the text that was scanned and hashed, never the file again (it may
            # have changed)
            with self._arena("cockpit-eval-", {"candidate.py": self.source}):
                self._load(ref)
                if self.opts.cascade:
                    self._cascade(ref)
                else:
                    self._verify_all(ref)
                    if res.ok:
                        self._time_all(ref)
                    first_part = self.opts.shard is None or self.opts.shard[0] == 1
                    if res.ok and self.opts.profile and first_part:  # one profile per evaluation
                        self._profile(ref)
        except _Stop:
            pass
        except ArenaTimeout:
            if self.call_limit is not None:
                what, limit = self.call_limit
                res.fail(
                    "too_slow",
                    f"a call on {what} ran past its {limit:.0f} s limit during {self.stage} "
                    "(hung, or far slower than the reference there)",
                    stage=self.stage,
                    shape=what,
                )
            else:
                res.fail(
                    "too_slow",
                    f"over the {self.limit:.0f} s limit during {self.stage}",
                    stage=self.stage,
                )
        except ArenaOOM as exc:
            res.fail(
                "oom",
                f"process grew to {exc.rss >> 20} MiB (limit {mem >> 20} MiB)",
                stage=self.stage,
            )
        except ArenaDied as exc:
            self._died(exc)
        except ProtocolViolation as exc:
            res.fail("integrity", str(exc), stage=self.stage)
        except WireError as exc:
            res.fail(
                "integrity",
                f"a malformed tensor reference arrived on the result channel: {exc}",
                stage=self.stage,
            )
        if res.ok:
            self._score()
        self.stage = "done"
        res.stage_s.pop("done", None)
        res.wall_s = time.monotonic() - t0
        res.breakdown_s = sum_breakdowns(sr.breakdown_s for sr in res.shapes)
        if self.calibrate_s:  # the null bursts, before the candidate was imported
            res.breakdown_s.setdefault("load", {})["judge_clock"] = round(self.calibrate_s, 4)
        res.env = {"torch": torch.__version__, "machine": scoring.machine_key(self.device)}
        return res

    def _cascade(self, ref: Any) -> None:
        """The loop's evaluation: screen, and promote only what could become a branch's best.

        Screen: the `screen` tier's shapes verified, its timed shapes timed with the short
        (quick) policy, scored. Promotion: the `promote` tier's shapes verified, every timed
        shape timed again with the evaluation's own policy (unless that is the quick one), the
        profile. Every check of a full evaluation runs on a promoted candidate; a screened one
        skipped only shapes and samples, and `Result.tier` says so wherever it is shown."""
        res = self.res
        res.tier = "screened"
        self._verify_all(ref, tier="screen")
        if not res.ok:
            return
        full = self.policy
        flags = list(res.flags)
        self.policy = PRESETS["quick"]
        self._time_all(ref, tier="screen")
        self.policy = full
        if not res.ok:
            return
        self._score()
        if not res.ok:
            return
        promote, why = self._promotion()
        res.promotion["why"] = why
        if not promote:
            return
        res.tier = "promoted"
        self._verify_all(ref, tier="promote")
        if not res.ok:
            return
        if full != PRESETS["quick"]:
            res.flags = flags
            self._time_all(ref)
        elif any(s.tier == "promote" for s in self._timed_shapes()):
            self._time_all(ref, tier="promote")
        if res.ok and self.opts.profile:
            self._profile(ref)

    def _timed_shapes(self) -> list[Shape]:
        """The shapes this evaluation times: benchmark, then the timed hidden ones."""
        return self._shapes("benchmark") + [s for s in self._shapes("hidden") if s.timed]

    def _promotion(self) -> tuple[bool, str]:
        """Could the screened candidate become its branch's best? Its screened times against the
        incumbent's on the same shapes (floored, weighted geometric mean of the ratios)."""
        inc = self.opts.incumbent
        res = self.res
        if not inc or inc.get("status") != "ok" or not inc.get("score_us"):
            return True, "no incumbent: a first passing candidate is promoted"
        final = self.opts.mode == "final"
        theirs = {}
        for s in inc.get("shapes") or []:
            tm = s.get("timing") or {}
            t = tm.get("mean_us" if final else "median_us")
            if isinstance(t, int | float) and t > 0:
                theirs[(s.get("shape"), s.get("set"))] = max(float(t), s.get("floor_us") or 0.0)
        logs, wsum = 0.0, 0.0
        for sr in res.shapes:
            if not sr.timing or (sr.shape, sr.set) not in theirs:
                continue
            mine = max(sr.timing.mean_us if final else sr.timing.median_us, sr.floor_us or 0.0)
            if mine <= 0:
                continue
            logs += sr.weight * math.log(mine / theirs[(sr.shape, sr.set)])
            wsum += sr.weight
        if not wsum:
            return True, "no shape timed by both it and the incumbent: promoted"
        ratio = math.exp(logs / wsum)
        res.promotion.update(ratio_to_incumbent=round(ratio, 4), incumbent=inc.get("candidate"))
        bar = 1.0 + self.opts.promote_margin
        if ratio <= bar:
            return (
                True,
                f"screened at {ratio:.3f}x the incumbent's time (promoted at <= {bar:.2f}x)",
            )
        return False, (
            f"screened at {ratio:.3f}x the incumbent's time: slower than the "
            f"{bar:.2f}x that could still become the branch's best, not promoted"
        )

    @property
    def mem(self) -> int:
        """The candidate's memory limit: RLIMIT_AS on the CPU, polled RSS on a GPU."""
        return self.opts.memory_bytes or (8 << 30 if self.device == "cpu" else 64 << 30)

    def _arena_cfg(self) -> ArenaTaskConfig:
        """What an arena is started with before any candidate exists: the same for every
        candidate of a task on a device, so an arena started ahead (`warm`) fits the next one."""
        task = self.task
        return {
            "device": self.device,
            "n_outputs": len(task.outputs),
            "forbidden_ops": [] if self.exempt else task.forbidden_ops,
            "forbidden_cnames": [] if self.exempt else task.forbidden_cnames,
            "sandbox": self.opts.sandbox,
            "exclude": [str(task.root), str(Path(__file__).resolve().parents[2])],
            "memory_bytes": self.mem if self.device == "cpu" else None,
        }

    def _start(self, cfg: ArenaTaskConfig, prefix: str, prime: bool = True) -> warm.Started:
        cache = scoring.data_dir() / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        return warm.start(
            cfg,
            device=self.device,
            exchange=self.opts.exchange,
            memory_bytes=None if self.device == "cpu" else self.mem,
            cache=cache,
            prefix=prefix,
            prime=prime,
        )

    @contextlib.contextmanager
    def _arena(self, prefix: str, files: dict[str, str]) -> Iterator[Path]:
        """An arena for the body of the `with` (`self.ch`, `self.tx`, `self.rx`), its work folder
        holding `files`; afterwards the process is ended (its log tail kept in the result) and its
        folders removed. With `Options.warm` it is the spare started during the previous
        evaluation when there is one, and a new spare is started for the next. Yields the work
        folder."""
        cfg = self._arena_cfg()
        arena = warm.take(cfg) if self.opts.warm else None
        how = "warm: started during the previous evaluation"
        if arena is None:
            arena = self._start(cfg, prefix)
            how = "started for this candidate"
        if self.opts.warm:
            try:
                # on a GPU the spare is configured once this evaluation is over (warm.prime_spare)
                warm.keep(self._start(cfg, prefix, prime=self.device == "cpu"))
            except OSError:
                warm.drop()
        self.arena = arena
        self.ch, self.ex, self.tx, self.rx = arena.ch, arena.ex, arena.tx, arena.rx
        self.arena_how = how
        try:
            for name, text in files.items():
                (arena.workdir / name).write_text(text)
            yield arena.workdir
        finally:
            tail, dropped, late = arena.close()
            self.res.log_tail = tail
            if dropped:
                self.res.flags.append(
                    f"output truncated: {dropped} bytes of the candidate's"
                    " stdout/stderr not kept (the first and last 64 KiB are)"
                )
            if late and self.res.ok:
                self.res.fail(
                    "integrity",
                    "bytes arrived on the result channel after the last reply",
                    stage=self.stage,
                )
            if self.opts.warm:
                warm.prime_spare()

    def _died(self, exc: ArenaDied) -> None:
        rc, tail = exc.returncode, exc.log_tail
        low = tail.lower()
        if rc < 0:
            name = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
            kind = "oom" if -rc == signal.SIGKILL else "crash"
            if "illegal memory access" in low:
                kind = "illegal_address"
            self.res.fail(
                kind,
                f"the process was killed by {name} during {self.stage}{_last_line(tail)}",
                stage=self.stage,
            )
        elif self.in_call:
            self.res.fail(
                "integrity",
                f"the candidate ended the process during the call (exit code {rc})",
                stage=self.stage,
            )
        elif "illegal memory access" in low:
            self.res.fail(
                "illegal_address", f"CUDA illegal memory access{_last_line(tail)}", stage=self.stage
            )
        else:
            self.res.fail(
                "crash",
                f"the process exited with code {rc} during {self.stage}{_last_line(tail)}",
                stage=self.stage,
            )

    def _request(self, msg: Request, limit: CallLimit | None = None) -> Reply:
        """A request runs candidate code; a process that ends while one is open ended in the call.
        `limit` bounds this request on its own, inside the evaluation's limit: its base seconds,
        and its compile allowance once the arena counts a compile started in this request (or
        at once where the count cannot tell, see `_compiles_counted`)."""
        self.in_call = True
        deadline, extend = self.deadline, None
        if limit is not None:
            now = time.monotonic()
            base, allowance = limit.seconds, limit.allowance_s
            beacon = self.arena.beacon if self.arena is not None else None
            if allowance and (beacon is None or not self._compiles_counted()):
                base, allowance = base + allowance, 0.0
            self.call_limit = (limit.what, base)
            deadline = min(deadline, now + base)
            if allowance:
                before = beacon.count()
                granted = min(self.deadline, now + base + allowance)

                def extend() -> float | None:
                    if beacon.count() == before:
                        return None
                    self.call_limit = (limit.what, base + allowance)
                    return granted

        reply: Reply = self.ch.request(msg, deadline, extend)
        self.call_limit = None
        self.in_call = False
        self.tx.reset()  # the arena has read this request's tensors: the next one starts over
        return reply

    def _compiles_counted(self) -> bool:
        """Whether the arena's compile count says when a first call compiles. Not for Triton in
        the CPU interpreter: nothing compiles there, and its first call is slow for other
        reasons, so those first calls keep the whole allowance."""
        return not (self.device == "cpu" and self.uses_triton)

    # --- per-call limits ------------------------------------------------------------------------
    def _limits(self) -> dict[str, float]:
        lim = dict(self.task.limits.for_device(self.device))
        lim.update(self.opts.limits or {})
        return lim

    def _per_call_s(self, shape: Shape) -> float:
        """How long one call may take on `shape`: `call_factor` times the reference's stored time
        there (`cockpit baseline`), at least `call_floor_s`."""
        lim = self._limits()
        ref_us = self.ref_times.get(shape.describe())
        scaled = lim["call_factor"] * ref_us * 1e-6 if ref_us else 0.0
        return max(lim["call_floor_s"], scaled)

    def _request_limit(
        self, shape: Shape, calls: int, nbytes: int, extra_s: float = 0.0
    ) -> CallLimit:
        """The limit of one request that makes `calls` calls on `shape` and moves `nbytes`
        between the processes: the calls, the copies at a pessimistic 0.5 GB/s and `extra_s` (a
        timing loop's own budget); a shape's first call may also compile (`first_call_s`)."""
        lim = self._limits()
        first = shape.describe() not in self.called
        self.called.add(shape.describe())
        seconds = calls * self._per_call_s(shape) + nbytes / 0.5e9 + extra_s
        # named like every other reason's shape; the agent's feedback scrubs hidden names
        return CallLimit(shape.describe(), seconds, lim["first_call_s"] if first else 0.0)

    # --- load -----------------------------------------------------------------------------------
    def _load(self, ref: Any = None) -> None:
        """Import the candidate in the arena; with `ref`, calibrate the judge's clock first."""
        self.stage = "load"
        self._progress("importing the candidate", 0, 1)
        setup: SetupReply = self.arena.wait_ready(self.deadline)
        if not setup.get("ready"):
            self.res.fail(setup.get("kind", "crash"), setup.get("message", ""), stage="load")
            raise _Stop
        if ref is not None and self.opts.judge_clock:
            t = time.perf_counter()
            self._calibrate(ref)
            self.calibrate_s = time.perf_counter() - t
        self.ch.send({"op": "load"})
        self.in_call = True
        loaded: LoadReply = self.ch.recv(self.deadline)
        self.in_call = False
        self.res.protections = loaded.get("protections", {})
        self.res.protections["arena"] = self.arena_how
        self.arena.serving = bool(loaded.get("ok"))
        self.res.protections["exchange"] = (
            "memfd (sealed against shrinking)" if isinstance(self.tx, wire.Region) else "files"
        )
        if not loaded.get("ok"):
            self.res.fail(
                loaded.get("kind", "import_error"), loaded.get("message", ""), stage="load"
            )
            raise _Stop
        self.res.profile["family"] = loaded.get("family", "")
        self.uses_triton = bool(loaded.get("uses_triton"))
        if self.device == "cpu" and self.uses_triton:
            self.res.comparable = False
            self.res.flags.append(
                "Triton ran in the CPU interpreter: times are for correctness runs only, not comparable"
            )
            # precise timing of interpreter runs is minutes spent on numbers nobody may compare
            self.policy = PRESETS["quick"]
        self._integrity(loaded.get("integrity", []), "load")

    def _watched(self, reply: dict[str, Any], stage: str, shape: str) -> None:
        """What the arena's watches saw during a stage: forbidden calls first, then integrity."""
        if reply.get("ops") and not self.exempt:
            when = " (while timed)" if stage == "time" else ""
            self.res.fail(
                "forbidden_call",
                f"called {', '.join(reply['ops'])} at run time{when}",
                stage=stage,
                shape=shape,
            )
            raise _Stop
        self._integrity(reply.get("integrity", []), stage, shape)

    def _integrity(self, diffs: list, stage: str, shape: str = "") -> None:
        seen = set()
        for kind, message in diffs:
            if message in seen:
                continue
            seen.add(message)
            what = {
                "timer": "timer",
                "checker": "checker function",
                "flags": "precision flag",
                "threads": "threads",
                "patch": "monkeypatch",
                "l2": "persisting L2",
            }.get(kind, kind)
            self.res.fail("integrity", f"{what}: {message}", stage=stage, shape=shape)
        if seen:
            raise _Stop

    # --- verify ---------------------------------------------------------------------------------
    def _shapes(self, name: str) -> list[Shape]:
        """The shapes of a set this evaluation covers: all of them, or with `shard` (k, n) every
        n-th of the hidden-then-benchmark list from the k-th on, so each part gets its share of
        the slow and the verify-only shapes, and the public ones in part 1 alone (the merge takes
        their verdicts from part 1; verifying them in every part would cost a slow QR seed
        nearly half of each part's GPU time: docs/decisions/0022-sharded-evaluations.md)."""
        shapes = self._all(name)
        if self.opts.shard is None:
            return shapes
        k, n = self.opts.shard
        if name == "public":
            return shapes if k == 1 else []
        offset = len(self._all("hidden")) if name == "benchmark" else 0
        return [s for i, s in enumerate(shapes) if (offset + i) % n == k - 1]

    def _all(self, name: str) -> list[Shape]:
        """Every shape of a set, whatever the shard."""
        return self.task.shape_set(self.device, name)

    def _verify_all(self, ref: Any, tier: str | None = None) -> None:
        """Verify every shape of the evaluation, or those of one cascade `tier`."""
        self.stage = "verify"
        hidden = [s for s in self._shapes("hidden") if s.timed or self.opts.verify_untimed]
        order = self._shapes("public") + hidden + self._shapes("benchmark")
        if tier is not None:
            order = [s for s in order if s.tier == tier]
        total = len(order)
        public_failed = False
        for i, shape in enumerate(order):
            if shape.set != "public" and public_failed:
                break
            self._progress(shape.describe() if not shape.hidden else f"hidden #{i}", i, total)
            sr = self._verify_shape(ref, shape)
            self.res.shapes.append(sr)
            if not sr.ok:
                if shape.set == "public":
                    public_failed = True
                else:
                    break
        self._progress("verified", total, total)

    def _verify_shape(self, ref: Any, shape: Shape) -> ShapeResult:
        task, res = self.task, self.res
        label = shape.describe()
        sr = ShapeResult(
            shape=label,
            set=shape.set,
            hidden=shape.hidden,
            ok=False,
            params=dict(shape.params),
            weight=shape.weight,
        )
        seed = secrets.randbits(62)
        with _clocked(sr, "verify", "inputs"):
            inputs = tuple(ref.make_inputs(dict(shape.params), seed, str(self.judge_device)))
            metas = [self.tx.pack(t, "i") for t in inputs]
        perturb = _choose_perturbation(inputs)
        n_fail = len(res.reasons)
        moved = 2 * sum(t.numel() * t.element_size() for t in inputs)  # in, and about as much out
        limit = self._request_limit(shape, 2 if perturb else 1, 2 * moved if perturb else moved)
        with _clocked(sr, "verify", "request"):
            request: VerifyRequest = {"op": "verify", "inputs": metas, "perturb": perturb}
            reply: VerifyReply = self._request(request, limit)
        _arena_wall(sr, "verify", reply)
        if not reply.get("ok"):
            kind = reply.get("kind", "exception")
            if (
                kind in ("exception", "oom", "illegal_address")
                and _numel(inputs) > INT32_LIMIT
                and kind == "illegal_address"
            ):
                kind = "overflow"
            res.fail(kind, reply.get("message", ""), stage="verify", shape=label)
            if kind in ("integrity", "illegal_address", "crash", "oom"):
                raise _Stop
            return sr
        self._watched(reply, "verify", label)
        for i in reply.get("mutated", []):
            if not task.allow_inplace:
                res.fail(
                    "input_mutated",
                    f"input {task.inputs[i]!r} was modified by the call",
                    stage="verify",
                    shape=label,
                )
        for msg in reply.get("aliased", []):
            if not task.allow_inplace:
                res.fail("output_aliases_input", msg, stage="verify", shape=label)
        for i in reply.get("guard_broken", []):
            res.fail(
                "out_of_bounds",
                f"a write landed outside input {task.inputs[i]!r} (guard band changed)",
                stage="verify",
                shape=label,
            )
        if len(res.reasons) > n_fail:
            return sr
        with _clocked(sr, "verify", "outputs"):
            outputs = self._receive_outputs(ref, inputs, reply["outputs"], label)
        if outputs is None:
            return sr
        with _clocked(sr, "verify", "check"):
            ok, metrics = run_check(task, ref, inputs, outputs, strict=self.opts.strict)
        sr.error = _jsonable_metrics(metrics)
        if not ok:
            kind = "nan_inf" if metrics.get("nonfinite") else "numerical"
            if _numel(inputs) > INT32_LIMIT:
                kind = "overflow"
                metrics["message"] = (
                    f"wrong only where tensors exceed 2**31 elements (32-bit index overflow?): {metrics.get('message', '')}"
                )
            res.fail(
                kind,
                metrics.get("message", "outputs do not match the reference"),
                stage="verify",
                shape=label,
            )
            return sr
        if "perturbed" in reply:
            changed = _apply_perturbation(inputs, perturb)
            with _clocked(sr, "verify", "outputs"):
                outs2 = self._receive_outputs(ref, changed, reply["perturbed"], label)
            if outs2 is None:
                return sr
            with _clocked(sr, "verify", "check"):
                ok2, m2 = run_check(task, ref, changed, outs2, strict=self.opts.strict)
            if not ok2:
                res.fail(
                    "stale_output",
                    "after one input element changed, the output did not follow "
                    f"(cached or replayed result?): {m2.get('message', '')}",
                    stage="verify",
                    shape=label,
                )
                return sr
        sr.ok = True
        return sr

    def _receive_outputs(
        self, ref: Any, inputs: tuple, metas: list[dict], label: str
    ) -> list[torch.Tensor] | None:
        """Validate metadata before reading any bytes, then load outputs onto the judge's device."""
        res, task = self.res, self.task
        try:
            expect = (
                expected_meta(ref, inputs) if not callable(getattr(ref, "check", None)) else None
            )
        except Exception:  # noqa: BLE001
            expect = None
        outs = []
        for j, m in enumerate(metas):
            name = task.outputs[j] if j < len(task.outputs) else str(j)
            if str(m.get("device", "")).split(":")[0] != self.judge_device.type:
                res.fail(
                    "bad_device",
                    f"output {name!r} is on {m.get('device')}, expected {self.judge_device.type}",
                    stage=self.stage,
                    shape=label,
                )
                return None
            if task.contiguous_outputs and not m.get("contiguous", True):
                res.fail(
                    "bad_strides",
                    f"output {name!r} is not contiguous (strides {m.get('stride')})",
                    stage=self.stage,
                    shape=label,
                )
                return None
            if expect is not None:
                shape, dtype = expect[j]
                if tuple(m["shape"]) != tuple(shape):
                    res.fail(
                        "bad_shape",
                        f"output {name!r} has shape {tuple(m['shape'])}, expected {tuple(shape)}",
                        stage=self.stage,
                        shape=label,
                    )
                    return None
                if m["dtype"] != str(dtype).removeprefix("torch."):
                    res.fail(
                        "bad_dtype",
                        f"output {name!r} is {m['dtype']}, expected {str(dtype).removeprefix('torch.')}",
                        stage=self.stage,
                        shape=label,
                    )
                    return None
            elif math.prod(m["shape"]) > 4 * max(t.numel() for t in inputs) + 1024:
                res.fail(
                    "bad_shape",
                    f"output {name!r} has shape {tuple(m['shape'])}, far larger than the inputs",
                    stage=self.stage,
                    shape=label,
                )
                return None
            if m["dtype"] not in wire.DTYPES:
                res.fail(
                    "bad_dtype",
                    f"output {name!r} has dtype {m['dtype']}",
                    stage=self.stage,
                    shape=label,
                )
                return None
            outs.append(self.rx.unpack(m, self.judge_device))
        return outs

    # --- time -----------------------------------------------------------------------------------
    def _time_all(self, ref: Any, tier: str | None = None) -> None:
        """Time every timed shape of the evaluation, or those of one cascade `tier`."""
        self.stage = "time"
        if self.opts.warm:
            warm.settle()  # the next candidate's arena finishes setting up before the clock runs
        timed = self._timed_shapes()
        if tier is not None:
            timed = [s for s in timed if s.tier == tier]
        by_label = {sr.shape + sr.set: sr for sr in self.res.shapes}
        for i, shape in enumerate(timed):
            self._progress(shape.describe() if not shape.hidden else f"hidden #{i}", i, len(timed))
            sr = by_label[shape.describe() + shape.set]
            self._time_shape(ref, shape, sr)
            if not self.res.ok:
                return
        self._progress("timed", len(timed), len(timed))

    def _input_pool(self, ref: Any, shape: Shape) -> list[tuple[torch.Tensor, ...]]:
        """2-8 input sets with fresh secret seeds (within the policy's pool_bytes on a GPU, 64 MiB
        on the CPU); the arena freshens each timed call from two of them."""
        first = tuple(
            ref.make_inputs(dict(shape.params), secrets.randbits(62), str(self.judge_device))
        )
        per_set = sum(t.numel() * t.element_size() for t in first)
        budget = self.policy.pool_bytes if self.device != "cpu" else (64 << 20)
        n_pool = max(2, min(8, budget // max(per_set, 1)))
        return [first] + [
            tuple(ref.make_inputs(dict(shape.params), secrets.randbits(62), str(self.judge_device)))
            for _ in range(n_pool - 1)
        ]

    def _time_shape(self, ref: Any, shape: Shape, sr: ShapeResult) -> None:
        pol = self.policy
        with _clocked(sr, "time", "inputs"):
            pool = self._input_pool(ref, shape)
            packed = [[self.tx.pack(t, "p") for t in entry] for entry in pool]
        rng = random.Random(secrets.randbits(62))
        check_first = sorted(
            rng.sample(range(pol.min_samples), min(pol.check_calls, pol.min_samples))
        )
        msg: TimeRequest = {
            "op": "time",
            "pool": packed,
            "policy": pol.__dict__,
            "seed": secrets.randbits(62),
            # spot checks: some early calls, ~5% of the rest at random, and always the last one,
            # so a candidate cannot pass the first calls and go stale later
            "check_seed": secrets.randbits(62),
            "check_first": check_first,
            "check_prob": 0.05,
            "check_max": 8,
            # untimed calls under the forbidden-call watch, interleaved at random
            "audit_prob": 0.05,
            "graph": self.device != "cpu",
            "timing": self.task.timing,
        }
        # the arena stops sampling after max_wall_s, between calls; past that, the call that
        # crossed it, a warm-up, an audit, the graph replays and the checked calls' copies: a
        # timing request that runs far longer holds a hung call
        per_set = sum(t.numel() * t.element_size() for t in pool[0])
        limit = self._request_limit(
            shape,
            4,
            (len(pool) + 2 * (pol.check_calls + 8)) * per_set,
            extra_s=1.5 * pol.max_wall_s + 15.0,
        )
        with _clocked(sr, "time", "request"):
            reply: TimeReply = self._request(msg, limit)
        _arena_wall(sr, "time", reply)
        label = sr.shape
        if not reply.get("ok"):
            self.res.fail(
                reply.get("kind", "exception"), reply.get("message", ""), stage="time", shape=label
            )
            raise _Stop
        self._watched(reply, "time", label)
        for c in reply.get("checked", []):
            inputs = self._rebuild(pool, c.get("recipe"))
            with _clocked(sr, "time", "outputs"):
                outs = self._receive_outputs(ref, inputs, c["outputs"], label)
            if outs is None:
                raise _Stop
            with _clocked(sr, "time", "check"):
                ok, metrics = run_check(self.task, ref, inputs, outs, strict=self.opts.strict)
            if not ok:
                self.res.fail(
                    "stale_output",
                    f"timed call #{c['call']} returned a wrong result although verification "
                    f"passed (results depend on call count or a cache): {metrics.get('message', '')}",
                    stage="time",
                    shape=label,
                )
                raise _Stop
        samples, host = reply["samples"], reply["host"]
        stats = summarize(samples, host, reply.get("stop", ""), reply.get("submit"))
        if reply.get("slack_us") and samples:  # a GPU slack: count the calls that outran it
            stats.late_pct = 100.0 * int(reply.get("late", 0)) / len(samples)
            stats.slack_median_us = float(reply["slack_us"])
        if reply.get("gpu"):  # end-to-end: the GPU's share of the wall time, for the record
            stats.gpu_median_us = statistics.median(reply["gpu"])
        g = reply.get("graph")
        if g and g.get("ok"):
            stats.graph_median_us = statistics.median(g["samples"])
        sr.timing = stats
        if self.device != "cpu":
            excess = host_excess(reply, samples, host)
            self.host_extra[label] = excess
            if excess > max(0.5 * stats.median_us, 50.0):
                self.res.fail(
                    "hidden_work",
                    f"host clock saw {stats.host_median_us:.1f} us per call but the timed "
                    f"stream only {stats.median_us:.1f} us: work runs outside the timed stream",
                    stage="time",
                    shape=label,
                )
                raise _Stop
            if late := slack_overrun(label, stats, float(reply.get("slack_us") or 0.0)):
                self.res.flags.append(late)
            if bound := host_bound(label, stats):
                self.res.flags.append(bound)
        if self.opts.judge_clock:
            with _clocked(sr, "time", "judge_clock"):
                self._clock_shape(ref, shape, sr, pool, label)

    def _rebuild(self, pool: list[tuple], recipe: Any) -> tuple[torch.Tensor, ...]:
        """The exact input of a checked timed call, from the judge's own copy of the pool: the
        arena only says which entries and which angle, so it cannot hand us a different input."""
        try:
            ia, ib, c, s = recipe
            ia, ib, c, s = int(ia), int(ib), float(c), float(s)
            if (
                not (0 <= ia < len(pool) and 0 <= ib < len(pool))
                or ia == ib
                or abs(c * c + s * s - 1) > 1e-6
            ):
                raise ValueError
        except (TypeError, ValueError):
            raise ProtocolViolation(
                "a malformed input recipe arrived for a checked timed call"
            ) from None
        return tuple(wire.combine(a, b, c, s) for a, b in zip(pool[ia], pool[ib]))

    # --- the judge's clock (judge_clock.py) ------------------------------------------------------
    def _calibrate(self, ref: Any) -> None:
        """Null bursts for every benchmark shape (the shapes the score is made of), at every
        length of its ladder, while the arena holds no candidate: what a burst costs besides the
        calls."""
        for shape in self._shapes("benchmark"):
            entry = tuple(
                ref.make_inputs(dict(shape.params), secrets.randbits(62), str(self.judge_device))
            )
            meta = expected_meta(ref, entry)
            outputs = [
                {"shape": list(dims), "dtype": str(dtype).removeprefix("torch.")}
                for dims, dtype in meta
            ]
            inputs = [
                {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
                for t in entry
            ]
            del entry
            ks = judge_clock.ladder(sum(math.prod(d) * t.itemsize for d, t in meta), self.device)
            msg = {"op": "null_burst", "outputs": outputs, "k": 0}
            # the arena makes the null's inputs itself, of these shapes and dtypes: their values
            # cost nothing that matters, their bytes would cost a transfer
            self._clocked_request(dict(msg, inputs=inputs), null=True)  # staged, not counted
            # unmeasured: the first long burst grows the heap and touches the code paths, which
            # the candidate's bursts later find done (a cold null would read them negative)
            self._clocked_request(dict(msg, k=ks[-1]), null=True)
            fastest: dict[int, float] = {}
            for _ in range(judge_clock.NULL_BURSTS[judge_clock.kind(self.device)]):
                for k in ks:
                    us = self._clocked_request(dict(msg, k=k), null=True)
                    fastest[k] = min(us, fastest.get(k, math.inf))
            self.null_us[shape.describe() + shape.set] = fastest

    def _clocked_request(
        self, msg: dict[str, Any], null: bool = False, limit: CallLimit | None = None
    ) -> float:
        """One burst request, timed on the judge's clock (us): wall time on a GPU, the arena's
        CPU time on the CPU (`judge_clock.cpu_us`). Its reply's commitments are kept in
        `self.commits`. A null burst runs before the candidate exists: no call is open."""
        msg: NullBurstRequest | BurstRequest = dict(
            msg, seed=secrets.randbits(62), wseed=secrets.randbits(62)
        )
        on_cpu = self.device == "cpu"
        t0 = judge_clock.cpu_us(self.ch.proc.pid) if on_cpu else time.perf_counter() * 1e6
        reply: NullBurstReply | BurstReply = (
            self.ch.request(msg, self.deadline) if null else self._request(msg, limit)
        )
        t1 = judge_clock.cpu_us(self.ch.proc.pid) if on_cpu else time.perf_counter() * 1e6
        elapsed = t1 - t0
        if not reply.get("ok"):
            self.res.fail(
                reply.get("kind", "exception"),
                reply.get("message", ""),
                stage=self.stage,
                shape="" if null else self.call_shape,
            )
            raise _Stop
        commits = reply.get("commits")
        if (
            not isinstance(commits, list)
            or len(commits) != msg["k"]
            or not all(isinstance(c, int | float) for c in commits)
        ):
            raise ProtocolViolation("a burst's reply does not hold one commitment per call")
        self.commits = (msg["seed"], msg["wseed"], [float(c) for c in commits])
        return elapsed

    def _clock_shape(
        self, ref: Any, shape: Shape, sr: ShapeResult, pool: list[tuple], label: str
    ) -> None:
        """Bursts of the candidate's calls on the shape just timed, read against the null bursts
        of the same length."""
        null = self.null_us.get(shape.describe() + shape.set)
        stats = sr.timing
        if null is None or stats is None:
            return
        k = judge_clock.burst_calls(stats.median_us, sorted(null))
        self.call_shape = label
        limit = self._request_limit(shape, k, 0, extra_s=5.0)
        reading = None
        for _ in range(judge_clock.READINGS):  # a forge is implausible every time
            bursts = []
            for _ in range(judge_clock.BURSTS[judge_clock.kind(self.device)]):
                bursts.append(self._clocked_request({"op": "burst", "k": k}, limit=limit))
                self._reveal(ref, pool, label)
            reading = judge_clock.read(
                null[k], k, bursts, stats.median_us, self.device, self.host_extra.get(label, 0.0)
            )
            if not reading.implausible:
                break
        stats.judge_us = round(reading.per_call_us, 3)
        stats.judge_ratio = round(reading.ratio, 3)
        stats.judge_k = k
        if reading.implausible:
            self.res.fail("integrity", judge_clock.message(reading), stage="time", shape=label)
            raise _Stop

    def _reveal(self, ref: Any, pool: list[tuple], label: str) -> None:
        """One call of the last burst, picked now: its output must be right for its input and
        match the commitment the burst's reply made for it."""
        seed, wseed, commits = self.commits
        j = secrets.randbelow(len(commits))
        rng = random.Random(seed)
        ia, ib, c, s = [wire.fresh_recipe(rng, len(pool)) for _ in range(j + 1)][j]
        reply: BurstRevealReply = self._request({"op": "burst_reveal", "calls": [j]})
        if not reply.get("ok") or not isinstance(reply.get("outputs"), list):
            raise ProtocolViolation("a burst's reveal did not return the call's outputs")
        inputs = tuple(wire.combine(a, b, c, s) for a, b in zip(pool[ia], pool[ib]))
        outs = self._receive_outputs(ref, inputs, reply["outputs"][0], label)
        if outs is None:
            raise _Stop
        ok, metrics = run_check(self.task, ref, inputs, outs, strict=self.opts.strict)
        if not ok:
            self.res.fail(
                "stale_output",
                f"call #{j} of a burst returned a wrong result although verification passed: "
                f"{metrics.get('message', '')}",
                stage="time",
                shape=label,
            )
            raise _Stop
        numel = max(o.numel() * (2 if o.is_complex() else 1) for o in outs)
        w = wire.commit_weights(wseed, self.judge_device, numel)
        mine = float(wire.commitment(list(outs), w))
        scale = float(wire.commitment([o.abs() for o in outs], w.abs()))
        if not wire.commitments_agree(commits[j], mine, scale):
            self.res.fail(
                "integrity",
                f"call #{j} of a burst committed to {commits[j]:.6g} but returned outputs "
                f"whose commitment is {mine:.6g}: the burst's reply did not come from its calls",
                stage="time",
                shape=label,
            )
            raise _Stop

    # --- profile --------------------------------------------------------------------------------
    def _profile(self, ref: Any) -> None:
        self.stage = "profile"
        shapes = self._all("benchmark") or self._all("public")
        shape = shapes[0]
        self._progress(shape.describe(), 0, 1)
        inputs = ref.make_inputs(dict(shape.params), secrets.randbits(62), str(self.judge_device))
        warm_in = ref.make_inputs(dict(shape.params), secrets.randbits(62), str(self.judge_device))
        nbytes = 2 * sum(t.numel() * t.element_size() for t in inputs)
        request: ProfileRequest = {
            "op": "profile",
            "inputs": [self.tx.pack(t, "f") for t in inputs],
            "warm": [self.tx.pack(t, "w") for t in warm_in],
        }
        reply: ProfileReply = self._request(
            request, self._request_limit(shape, 4, 2 * nbytes, extra_s=60.0)
        )
        if reply.get("ok"):
            reply.pop("ok", None)
            reply.pop("seq", None)
            self.res.profile.update(reply, shape=shape.describe())
        else:
            self.res.profile["error"] = reply.get("message", "")
        self._progress("profiled", 1, 1)

    # --- score ----------------------------------------------------------------------------------
    def _score(self) -> None:
        res, task = self.res, self.task
        self.stage = "score"
        ceil = scoring.ceilings(self.device)
        final = self.opts.mode == "final"
        shapes = {
            (s.describe(), s.set): s for s in self._shapes("benchmark") + self._shapes("hidden")
        }
        bench, hidden = [], []
        for sr in res.shapes:
            if not sr.timing:
                continue
            shape = shapes[(sr.shape, sr.set)]
            fl, bound = scoring.floor_us(task, shape, ceil, self.device)
            t = sr.timing.mean_us if final else sr.timing.median_us
            sr.floor_us, sr.bound = fl, bound
            sr.roofline_pct = 100.0 * fl / t if t > 0 else None
            # On the CPU there is no flush, so small inputs sit in cache and beat the DRAM floor
            # legitimately: the impossible-speed gate is for flushed (GPU) timings only.
            if res.comparable and self.device != "cpu" and t < fl * 0.98:
                res.fail(
                    "impossible_speed",
                    f"{t:.2f} us is below the physical floor of {fl:.2f} us ({bound}-bound)",
                    stage="score",
                    shape=sr.shape,
                )
            (bench if sr.set == "benchmark" else hidden).append((t, fl, sr.weight))
        if bench:
            res.geomean_us = scoring.score(
                [b[0] for b in bench], [b[1] for b in bench], [b[2] for b in bench]
            )
            floors = scoring.score(
                [b[1] for b in bench], [b[1] for b in bench], [b[2] for b in bench]
            )
            res.roofline_pct = 100.0 * floors / res.geomean_us
        if hidden:
            res.hidden_geomean_us = scoring.score(
                [h[0] for h in hidden], [h[1] for h in hidden], [h[2] for h in hidden]
            )
        every = bench + hidden
        if every:
            res.score_us = scoring.score(
                [e[0] for e in every], [e[1] for e in every], [e[2] for e in every]
            )
        stored = baselines.load(task, self.device)
        for name, b in stored.items():
            if b.get("geomean_us") and res.geomean_us:
                res.speedups[name] = b["geomean_us"] / res.geomean_us
        ref_b = stored.get("reference", {}).get("per_shape", {})
        for sr in res.shapes:
            if (
                sr.timing
                and ref_b.get(sr.shape)
                and ref_b[sr.shape] / sr.timing.median_us > 10
                and not self.exempt
            ):
                flag = f"review: {sr.shape} is {ref_b[sr.shape] / sr.timing.median_us:.0f}x faster than the reference"
                if flag not in res.flags:
                    res.flags.append(flag)


@contextlib.contextmanager
def _clocked(sr: ShapeResult, stage: str, key: str) -> Iterator[None]:
    """Add the wall time of the block to `sr.breakdown_s[stage][key]` (where an evaluation's time
    goes; informational)."""
    t = time.perf_counter()
    try:
        yield
    finally:
        d = sr.breakdown_s.setdefault(stage, {})
        d[key] = round(d.get(key, 0.0) + time.perf_counter() - t, 4)


def _arena_wall(sr: ShapeResult, stage: str, reply: Any) -> None:
    """The arena's own account of a request (`wall_s`: its total, the candidate's calls, the
    sampling loop). It comes from the candidate's process, so only finite non-negative numbers
    under known keys are kept: never trusted for anything but this breakdown."""
    got = reply.get("wall_s") if isinstance(reply, dict) else None
    if not isinstance(got, dict):
        return
    d = sr.breakdown_s.setdefault(stage, {})
    for key, name in (("arena", "arena"), ("candidate", "arena_candidate"), ("loop", "arena_loop")):
        v = got.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e6:
            d[name] = round(float(v), 4)


def _choose_perturbation(inputs: tuple[torch.Tensor, ...]) -> dict[str, Any] | None:
    for i, t in enumerate(inputs):
        if t.is_floating_point() and t.numel():
            k = secrets.randbelow(t.numel())
            old = float(t.reshape(-1)[k])
            return {"input": i, "index": k, "value": old + max(1.0, abs(old)) * 0.75}
    return None


def _apply_perturbation(
    inputs: tuple[torch.Tensor, ...], p: dict[str, Any]
) -> tuple[torch.Tensor, ...]:
    out = [t.clone() for t in inputs]
    out[p["input"]].view(-1)[p["index"]] = p["value"]
    return tuple(out)


def _numel(inputs: tuple[torch.Tensor, ...]) -> int:
    return max((t.numel() for t in inputs), default=0)


def _last_line(tail: str) -> str:
    lines = [ln for ln in tail.strip().splitlines() if ln.strip()]
    # the log is the candidate's own output: quoted and labelled, never presented as our words
    return f"; last log line: {lines[-1][:200]!r}" if lines else ""


def _jsonable_metrics(m: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in m.items():
        if isinstance(v, bool | int | float | str) or v is None:
            out[k] = v
        elif isinstance(v, list | tuple):
            out[k] = [x if isinstance(x, int | float | str) else str(x) for x in v][:8]
        else:
            out[k] = str(v)[:200]
    return out


# --- A/B comparison of two candidates in one process (the protocol's improvement rule) ---------
def compare(
    task: Task,
    source_a: str,
    source_b: str,
    opts: Options | None = None,
    shapes: list[Shape] | None = None,
) -> dict[str, Any]:
    """Is challenger A faster than incumbent B? Both are loaded into one arena process and their
    timed calls interleaved on the same fresh inputs (`arena.compare`), per timed shape; each
    shape gets `timing.compare_interleaved`, and the verdict is on the weighted geometric mean
    of the per-shape ratios with a 95% interval (delta method on the logs). Timing only: both
    candidates must have passed their own evaluations (nothing is verified here).

    Returns {"ok", "faster", "ratio" (B time / A time: > 1 means A is faster), "ci_low",
    "ci_high", "shapes": [{"shape", "ratio", "ci_low", "ci_high", "faster", "n", "stop"}],
    "wall_s"}, or {"ok": False, "kind", "message"} when a candidate cannot be loaded or run."""
    opts = opts or Options()
    return _Comparison(task, source_a, source_b, opts, shapes).compare()


class _Comparison(_Evaluation):
    def __init__(
        self, task: Task, source_a: str, source_b: str, opts: Options, shapes: list[Shape] | None
    ) -> None:
        super().__init__(
            task, Path("candidate.py"), source_a, opts, exempt=is_baseline(task, source_a)
        )
        self.source_b = source_b
        self.only = shapes

    def compare(self) -> dict[str, Any]:
        t0 = time.monotonic()
        self.deadline = t0 + self.limit
        if self.opts.static:
            for name, src in (("A", self.source), ("B", self.source_b)):
                if is_baseline(self.task, src):
                    continue
                findings = scan(src, self.task.forbidden)
                if findings:
                    return {
                        "ok": False,
                        "kind": findings[0].kind,
                        "message": f"{name}: {findings[0].message}",
                    }
        try:
            return self._compare_in(t0)
        except (ArenaTimeout, ArenaOOM, ArenaDied, ProtocolViolation, WireError) as exc:
            return {
                "ok": False,
                "kind": "crash"
                if isinstance(exc, ArenaDied)
                else "too_slow"
                if isinstance(exc, ArenaTimeout)
                else "integrity",
                "message": f"{type(exc).__name__}: {exc}",
            }

    def _compare_in(self, t0: float) -> dict[str, Any]:
        ref = load_reference(self.task)
        out: dict[str, Any] = {"ok": True, "shapes": []}
        files = {"candidate.py": self.source, "candidate_b.py": self.source_b}
        with self._arena("cockpit-ab-", files):
            try:
                self._load()
            except _Stop:
                return {"ok": False, **self._first_reason("A")}
            loaded: LoadBReply = self._request({"op": "load_b"})
            if self.opts.warm:
                warm.settle()  # the next arena is idle before the interleaved timing starts
            if not loaded.get("ok"):
                return {
                    "ok": False,
                    "kind": loaded.get("kind", "import_error"),
                    "message": f"B: {loaded.get('message', '')}",
                }
            timed = self.only or self._timed_shapes()
            for i, shape in enumerate(timed):
                request: CompareRequest = {
                    "op": "compare",
                    "timing": self.task.timing,
                    "pool": self._pool(ref, shape),
                    "policy": self.policy.__dict__,
                    "seed": secrets.randbits(62),
                }
                reply: CompareReply = self._request(request)
                label = shape.describe() if not shape.hidden else f"hidden #{i}"
                if not reply.get("ok"):
                    return {
                        "ok": False,
                        "kind": reply.get("kind", "exception"),
                        "message": f"{label}: {reply.get('message', '')}",
                    }
                c = compare_interleaved(reply["a"], reply["b"])
                out["shapes"].append(
                    {
                        "shape": label,
                        "weight": shape.weight,
                        "ratio": c.ratio,
                        "ci_low": c.ci_low,
                        "ci_high": c.ci_high,
                        "faster": c.faster,
                        "n": len(reply["a"]),
                        "stop": reply.get("stop", ""),
                    }
                )
        out.update(_combine(out["shapes"]))
        out["wall_s"] = time.monotonic() - t0
        return out

    def _first_reason(self, who: str) -> dict[str, str]:
        r = self.res.reasons[0] if self.res.reasons else None
        kind = getattr(r, "kind", "import_error")
        return {"kind": kind, "message": f"{who}: {getattr(r, 'message', 'did not load')}"}

    def _pool(self, ref: Any, shape: Shape) -> list[list[dict[str, Any]]]:
        """Input sets for one shape, as `_time_shape` builds them, packed for the arena."""
        return [[self.tx.pack(t, "p") for t in entry] for entry in self._input_pool(ref, shape)]


def _combine(shapes: list[dict[str, Any]], min_gain: float = 0.03) -> dict[str, Any]:
    """Weighted geometric mean of the per-shape ratios, with a 95% interval built on the log
    scale: each shape's interval is asymmetric in the ratio (a sign-test interval over few rounds
    can span 100x-9000x), so its half-width is taken in log units, (log hi - log lo) / 2, and that
    over 1.96 is its standard error. One shape keeps its own interval exactly."""
    if not shapes:
        return {"ratio": math.nan, "ci_low": math.nan, "ci_high": math.nan, "faster": False}
    if len(shapes) == 1:
        (s,) = shapes
        ratio, lo, hi = s["ratio"], s["ci_low"], s["ci_high"]
    else:
        wsum = sum(s["weight"] for s in shapes)
        log_r = sum(s["weight"] * math.log(s["ratio"]) for s in shapes) / wsum
        var = sum(
            ((s["weight"] / wsum) * (math.log(s["ci_high"]) - math.log(s["ci_low"])) / (2 * 1.96))
            ** 2
            for s in shapes
        )
        ratio = math.exp(log_r)
        lo, hi = math.exp(log_r - 1.96 * math.sqrt(var)), math.exp(log_r + 1.96 * math.sqrt(var))
    return {
        "ratio": ratio,
        "ci_low": lo,
        "ci_high": hi,
        "faster": ratio >= 1 + min_gain and lo > 1.0,
    }
