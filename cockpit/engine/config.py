"""What one engine run is configured with; stored in the session so `resume` continues alike."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cockpit.harness import DEFAULT_EXCHANGE


@dataclass
class EngineConfig:
    task: str  # task folder (absolute path)
    device: str = "cpu"
    beam: int = 4  # live branches, 3-5 recommended
    budget: int = 40  # evaluations in total (seeds included)
    mode: str = "iterate"  # harness timing policy: iterate | final | quick
    agent: str = "tuner"
    model: str | None = None
    plateau_window: int = 6  # evaluations of a branch without a significant improvement
    family_quota: int = 2  # at most this many live branches per algorithm family
    seed: int = 0
    outage_cooldown_s: float = 300.0  # a branch paused by a provider outage retries after this
    # confirm "better" by interleaved A/B timing against the incumbent in one process:
    # auto = on a GPU (where processes differ by up to 37%), off on the CPU (CI time)
    ab_confirm: str = "auto"  # auto | on | off
    # stop starting evaluations after this many seconds of this run (0: no limit); the ones in
    # flight finish, then the session is `stopped` ("time limit"), resumable like any other
    max_time_s: float = 0.0
    exchange: str = DEFAULT_EXCHANGE  # how evaluations move tensors (Options.exchange)
    # screen every candidate and promote only those that could become a branch's best to the
    # full evaluation (judge.Options.cascade); off: every candidate gets the full evaluation
    cascade: str = "on"  # on | off
    # start each worker's next arena while the current candidate is judged (judge.Options.warm)
    warm: str = "on"  # on | off
    # where evaluations run: local = one worker process per visible GPU (or one for the CPU) of
    # this host; ray = one Ray actor per GPU (or per `ray_cpus` CPU slots) of a Ray cluster
    backend: str = "local"  # local | ray
    ray_address: str | None = None  # the cluster's head (host:port, auto); None: $RAY_ADDRESS
    ray_cpus: float = 1.0  # CPU slots an evaluation holds on a CPU cluster
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cascade_enabled(self) -> bool:
        return self.cascade != "off"

    @property
    def warm_enabled(self) -> bool:
        return self.warm != "off"

    @property
    def ab_enabled(self) -> bool:
        return self.ab_confirm == "on" or (self.ab_confirm == "auto" and self.device != "cpu")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EngineConfig:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)
