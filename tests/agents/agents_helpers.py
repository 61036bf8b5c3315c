"""Fixtures for the agent tests: a scripted provider on 127.0.0.1, fake keys in the environment,
profiles written to a temporary folder, and requests against the real softmax task."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import fake_provider
import pytest

from cockpit.agents.base import ProposalRequest
from cockpit.agents.profiles import parse_profile

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "kernels" / "softmax"
OPENAI_KEY = "sk-test-openai-9f8e7d6c5b4a39281706"
ANTHROPIC_KEY = "sk-ant-test-1a2b3c4d5e6f7a8b9c0d"

PARENT = '''"""Baseline: PyTorch's own softmax kernel (one fused aten kernel per call)."""

import torch

FAMILY = "baseline"


def kernel(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)
'''

GOOD = '''import torch

FAMILY = "baseline"


def kernel(x: torch.Tensor) -> torch.Tensor:
    m = x.amax(dim=-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(dim=-1, keepdim=True)
'''


def reply_with(source: str, prose: str = "One pass: subtract the row max, exponentiate, normalize.") -> str:
    return f"Here is the new kernel.\n\n```python\n{source}```\n\n{prose}\n"


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for var in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL",
                "COCKPIT_LLM_RETRIES", "COCKPIT_LLM_BACKOFF_S", "COCKPIT_LLM_TIMEOUT_S"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    return {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY}


@pytest.fixture
def provider() -> Iterator[fake_provider.FakeProvider]:
    fake = fake_provider.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def write_profile(tmp_path: Path) -> Callable[..., Path]:
    def write(name: str = "agent", body: str = "You write fast, correct kernels.", **fields: object) -> Path:
        lines = []
        for k, v in fields.items():
            if isinstance(v, list | tuple):
                v = "[" + ", ".join(map(str, v)) + "]"
            elif isinstance(v, bool):
                v = str(v).lower()
            lines.append(f"{k}: {v}")
        path = tmp_path / f"{name}.md"
        path.write_text("---\n" + "\n".join(lines) + "\n---\n" + body + "\n")
        return path

    return write


@pytest.fixture
def make_proposer(write_profile, provider, keys, tmp_path):
    """An LLMProposer on a profile pointing at the fake provider (OpenAI protocol by default)."""
    from cockpit.agents.llm import LLMProposer

    def make(**fields: object) -> LLMProposer:
        base = {"proposer": "llm", "model": "openai/gpt-4o-mini", "api_base": provider.openai_base,
                "retries": 2, "backoff_s": 0.01, "timeout_s": 5, "stream": False, "max_tokens": 2000}
        base.update(fields)
        return LLMProposer(parse_profile(write_profile(**base)), transcript=tmp_path / "transcript.jsonl")

    return make


@pytest.fixture
def request_for() -> Callable[..., ProposalRequest]:
    def make(**kw: object) -> ProposalRequest:
        args = dict(task_name="softmax", task_root=str(TASK), branch="b1", family="baseline", parent_id="c0001",
                    parent_source=PARENT, parent_result=None)
        args.update(kw)
        return ProposalRequest(**args)

    return make


@pytest.fixture(autouse=True, scope="session")
def _offline_cost_map() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_configure(config: pytest.Config) -> None:
    # litellm's pydantic models warn on import and on every response; noise, not our code
    config.addinivalue_line("filterwarnings", "ignore:Item '.*' on TypedDict class:UserWarning")
    config.addinivalue_line("filterwarnings", "ignore:Accessing the 'model_.*' attribute:DeprecationWarning")
