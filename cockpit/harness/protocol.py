"""The messages between the judge and the arena, typed in one place.

Every message is one JSON object on the channel (`channel.Channel`; multiprocessing's
length-prefixed framing). In order:

1. judge -> arena: `ArenaConfig` (no `op`): the task-level configuration (`ArenaTaskConfig`,
   the same for every candidate of a task on a device) plus the started process's own paths and
   file descriptors. The arena sets up and answers `SetupReply`.
2. judge -> arena: any number of `NullBurstRequest`s (the judge's clock, before any candidate).
3. judge -> arena: `LoadRequest`; the arena imports the candidate and answers `LoadReply`.
4. judge -> arena: served requests by `op` (`REQUESTS`), each answered by one reply
   (`REPLIES`); a request that fails in the arena is answered by `Failure`.
5. judge -> arena: `ByeRequest`; the arena answers `ByeReply` and exits.

Requests sent through `Channel.request` carry `seq`, added by the channel, and their replies
echo it. Everything an arena sends is untrusted: these types say what a well-behaved arena sends,
and the judge still reads each field defensively. Keys the receiver reads with a default are
`NotRequired`.

Standard library only: the arena and the judge may import it before anything else.
"""

# No `from __future__ import annotations`: on Python 3.11 a TypedDict built from string
# annotations counts `NotRequired[...]` keys as required.
from typing import Any, Literal, NotRequired, TypedDict

# --- pieces ---------------------------------------------------------------------------------


class TensorMeta(TypedDict):
    """A tensor in the exchange (`wire.pack` / `wire.Region.pack`): its description plus where
    its bytes are, a file name (`files` exchange) or an [offset, nbytes] region (`memfd`)."""

    dtype: str
    shape: list[int]
    stride: list[int]
    device: str
    contiguous: bool
    file: NotRequired[str]
    region: NotRequired[list[int]]


class TensorSpec(TypedDict):
    """Shape and dtype only: the null burst makes tensors of these itself."""

    shape: list[int]
    dtype: str


class PolicyDict(TypedDict):
    """`timing.Policy` as its fields (`Policy.__dict__`)."""

    min_samples: int
    min_total_ms: float
    target_sem: float
    max_total_ms: float
    max_wall_s: float
    max_samples: int
    warmup_calls: int
    warmup_ms: float
    check_calls: int
    pool_bytes: int


class Perturbation(TypedDict):
    """One element of one input changed in place for the verify's second call."""

    input: int
    index: int
    value: float


# an integrity note: [kind, message] (a JSON array)
IntegrityNote = list[str]


# --- the configuration ----------------------------------------------------------------------


class ArenaTaskConfig(TypedDict):
    """What an arena is started with before any candidate exists (`judge._arena_cfg`); its JSON
    is the key under which an arena started ahead fits the next candidate (`warm.key`)."""

    device: str
    n_outputs: int
    forbidden_ops: NotRequired[list[str]]
    forbidden_cnames: NotRequired[list[str]]
    sandbox: NotRequired[bool]
    exclude: NotRequired[list[str]]
    memory_bytes: NotRequired[int | None]


class ArenaConfig(ArenaTaskConfig):
    """The first message (`warm.start`): the task-level configuration plus the started process's
    own folders and the file descriptors it inherited."""

    candidate: str  # the file the arena imports on `load` (written by the judge)
    workdir: str
    exchange: str  # the exchange folder
    cache_dir: str
    regions: NotRequired[list[int] | None]  # [to the arena, to the judge] memfds; None: files
    beacon: NotRequired[int | None]  # the compile beacon's memfd (`wire.Beacon`)


# --- requests (judge -> arena) ---------------------------------------------------------------


class LoadRequest(TypedDict):
    op: Literal["load"]


class ByeRequest(TypedDict):
    op: Literal["bye"]


class NullBurstRequest(TypedDict):
    """A burst of a kernel that only writes outputs of the reference's shapes; `inputs` stages
    a new shape for the requests that follow."""

    op: Literal["null_burst"]
    seq: NotRequired[int]
    k: int
    seed: int
    wseed: int
    outputs: list[TensorSpec]
    inputs: NotRequired[list[TensorSpec]]


class VerifyRequest(TypedDict):
    op: Literal["verify"]
    seq: NotRequired[int]
    inputs: list[TensorMeta]
    perturb: NotRequired[Perturbation | None]


class TimeRequest(TypedDict):
    op: Literal["time"]
    seq: NotRequired[int]
    pool: list[list[TensorMeta]]
    policy: PolicyDict
    seed: int  # the recipes of the fresh inputs
    check_seed: int  # which calls are spot-checked or audited
    check_first: list[int]
    check_prob: float
    check_max: int
    audit_prob: float
    graph: NotRequired[bool]  # also time a CUDA-graph replay of a short call
    timing: NotRequired[Literal["kernel", "end_to_end"]]  # the task's `timing` (task.toml)


class BurstRequest(TypedDict):
    op: Literal["burst"]
    seq: NotRequired[int]
    k: int
    seed: int
    wseed: int


class BurstRevealRequest(TypedDict):
    op: Literal["burst_reveal"]
    seq: NotRequired[int]
    calls: list[int]


class ProfileRequest(TypedDict):
    op: Literal["profile"]
    seq: NotRequired[int]
    inputs: list[TensorMeta]
    warm: NotRequired[list[TensorMeta]]


class LoadBRequest(TypedDict):
    op: Literal["load_b"]
    seq: NotRequired[int]


class CompareRequest(TypedDict):
    op: Literal["compare"]
    seq: NotRequired[int]
    pool: list[list[TensorMeta]]
    policy: PolicyDict
    seed: int
    timing: NotRequired[Literal["kernel", "end_to_end"]]


Request = (
    LoadRequest
    | ByeRequest
    | NullBurstRequest
    | VerifyRequest
    | TimeRequest
    | BurstRequest
    | BurstRevealRequest
    | ProfileRequest
    | LoadBRequest
    | CompareRequest
)

# --- replies (arena -> judge) ----------------------------------------------------------------


class Failure(TypedDict):
    """Any request that failed in the arena (an exception in the candidate's call, a protocol
    misuse, a set-up or import failure). `seq` is absent only before the candidate is loaded."""

    ok: Literal[False]
    kind: str
    message: str
    seq: NotRequired[int]


class Ready(TypedDict):
    ready: Literal[True]


SetupReply = Ready | Failure


class Loaded(TypedDict):
    ok: Literal[True]
    uses_triton: bool
    family: str
    tunables: dict[str, Any]
    integrity: list[IntegrityNote]
    protections: dict[str, Any]  # what the arena's set-up applied (`Arena.setup`)


class LoadFailed(Failure):
    protections: dict[str, Any]


LoadReply = Loaded | LoadFailed


class VerifyWall(TypedDict):
    arena: float
    candidate: float


class Verified(TypedDict):
    ok: Literal[True]
    seq: int
    ops: list[str]  # forbidden calls the watch saw
    outputs: list[TensorMeta]
    mutated: list[int]
    aliased: list[str]
    guard_broken: list[int]
    integrity: list[IntegrityNote]
    perturbed: NotRequired[list[TensorMeta]]
    wall_s: VerifyWall


class CheckedCall(TypedDict):
    """A timed call whose outputs the judge checks; `recipe` is [ia, ib, cos, sin]."""

    call: int
    recipe: list[float]
    outputs: list[TensorMeta]


class GraphTimes(TypedDict):
    ok: bool
    samples: NotRequired[list[float]]
    message: NotRequired[str]


class TimeWall(TypedDict):
    arena: float
    loop: float


class Timed(TypedDict):
    ok: Literal[True]
    seq: int
    samples: list[float]
    host: list[float]
    submit: list[float]
    late: int
    slack_us: float
    slacks: list[float]
    checked: list[CheckedCall]
    stop: str
    flush_us: float
    gpu: list[float]  # end-to-end timing: each sampled call's GPU time (empty otherwise)
    integrity: list[IntegrityNote]
    ops: list[str]
    audits: int
    graph: NotRequired[GraphTimes]
    wall_s: TimeWall


class Burst(TypedDict):
    """A burst's (or a null burst's) commitments, one per call."""

    ok: Literal[True]
    seq: NotRequired[int]  # a null burst echoes the `seq` it was sent, if any
    commits: list[float]


class Revealed(TypedDict):
    ok: Literal[True]
    seq: int
    outputs: list[list[TensorMeta]]  # per revealed call, its outputs


class KernelRow(TypedDict):
    name: str
    calls: int
    us: float
    group: str


class Profiled(TypedDict):
    ok: Literal[True]
    seq: int
    launches: int
    groups: dict[str, int]
    top: list[KernelRow]
    unit: str
    # torch.compile candidates: graph count and breaks (`Arena._explain`), or why not
    graphs: NotRequired[int]
    graph_break_count: NotRequired[int]
    graph_breaks: NotRequired[list[str]]
    graph_breaks_error: NotRequired[str]


class LoadedB(TypedDict):
    ok: Literal[True]
    seq: int
    integrity: list[IntegrityNote]


class Compared(TypedDict):
    ok: Literal[True]
    seq: int
    a: list[float]
    b: list[float]
    stop: str
    integrity: list[IntegrityNote]


class ByeReply(TypedDict):
    bye: Literal[True]


NullBurstReply = Burst | Failure
VerifyReply = Verified | Failure
TimeReply = Timed | Failure
BurstReply = Burst | Failure
BurstRevealReply = Revealed | Failure
ProfileReply = Profiled | Failure
LoadBReply = LoadedB | Failure
CompareReply = Compared | Failure

Reply = (
    Ready
    | Loaded
    | LoadFailed
    | Verified
    | Timed
    | Burst
    | Revealed
    | Profiled
    | LoadedB
    | Compared
    | ByeReply
    | Failure
)

# --- by op ------------------------------------------------------------------------------------

# each request's type, by its `op`
REQUESTS: dict[str, type] = {
    "load": LoadRequest,
    "bye": ByeRequest,
    "null_burst": NullBurstRequest,
    "verify": VerifyRequest,
    "time": TimeRequest,
    "burst": BurstRequest,
    "burst_reveal": BurstRevealRequest,
    "profile": ProfileRequest,
    "load_b": LoadBRequest,
    "compare": CompareRequest,
}

# the replies a request of each `op` may get (one of these)
REPLIES: dict[str, tuple[type, ...]] = {
    "load": (Loaded, LoadFailed),
    "bye": (ByeReply,),
    "null_burst": (Burst, Failure),
    "verify": (Verified, Failure),
    "time": (Timed, Failure),
    "burst": (Burst, Failure),
    "burst_reveal": (Revealed, Failure),
    "profile": (Profiled, Failure),
    "load_b": (LoadedB, Failure),
    "compare": (Compared, Failure),
}

# the requests the arena's serve loop answers (after `load`), each with its `seq`
SERVED = ("verify", "time", "burst", "burst_reveal", "profile", "load_b", "compare")
