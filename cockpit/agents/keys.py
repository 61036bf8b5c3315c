"""Provider keys: which are present (by name only) and scrubbing their values out of any text.

Keys live in the environment, under litellm's usual names, and nowhere else. Anything the agent
code hands back (a proposal's note and usage, an error's reason, a transcript line) goes through
`scrub`, which replaces the value of every environment variable whose name ends in _KEY, _TOKEN
or _SECRET: a provider that echoes the request headers into an error message cannot leak a key
into the session record that way.
"""

from __future__ import annotations

import os
from typing import Any

SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET")
REDACTED = "[redacted]"
MIN_SECRET_LEN = 6  # shorter values ("1", "true") would mangle ordinary text and protect nothing

# provider prefix of a litellm model name -> the variables litellm reads its key from
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "vertex_ai": ("GOOGLE_APPLICATION_CREDENTIALS",),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY"),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "azure": ("AZURE_API_KEY",),
    "bedrock": ("AWS_ACCESS_KEY_ID",),
    "huggingface": ("HUGGINGFACE_API_KEY", "HF_TOKEN"),
    "ollama": (),  # local, no key
    "hosted_vllm": (),
}


def provider_of(model: str) -> str:
    """`openai/gpt-4o` -> openai; a bare name is litellm's default (OpenAI)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def key_names(model: str) -> tuple[str, ...]:
    return PROVIDER_KEYS.get(provider_of(model), ())


def has_key(model: str) -> bool:
    names = key_names(model)
    return not names or any(os.environ.get(n) for n in names)


def present_keys() -> dict[str, bool]:
    """Every known key variable, and any other *_API_KEY set: name -> present. Never values."""
    names = {n for ns in PROVIDER_KEYS.values() for n in ns}
    names |= {k for k in os.environ if k.endswith("_API_KEY")}
    return {n: bool(os.environ.get(n)) for n in sorted(names)}


def secret_values() -> list[str]:
    vals = {v for k, v in os.environ.items() if k.upper().endswith(SECRET_SUFFIXES) and len(v) >= MIN_SECRET_LEN}
    return sorted(vals, key=len, reverse=True)


def scrub(obj: Any) -> Any:
    """`obj` (a string, or lists/dicts of them) with every secret value replaced."""
    secrets = secret_values()
    if not secrets:
        return obj
    return _scrub(obj, secrets)


def _scrub(obj: Any, secrets: list[str]) -> Any:
    if isinstance(obj, str):
        for s in secrets:
            if s in obj:
                obj = obj.replace(s, REDACTED)
        return obj
    if isinstance(obj, dict):
        return {_scrub(k, secrets): _scrub(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_scrub(v, secrets) for v in obj)
    return obj
