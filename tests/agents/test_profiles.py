"""Agent profiles: typed fields, one-line errors naming file and field, the shipped profiles."""

from __future__ import annotations

import pytest

from cockpit.agents.profiles import (
    ProfileError,
    list_profiles,
    load_profile,
    make_proposer,
    parse_profile,
)


def test_llm_fields_are_typed_with_defaults(write_profile):
    p = parse_profile(write_profile(proposer="llm", model="openai/gpt-4o-mini", fallbacks=["openai/gpt-4.1-nano"],
                                    temperature=0.3, max_tokens=4000, output_format="diff", budget_usd=1.5,
                                    budget_tokens=100000, strategy="best-of-n", n=3,
                                    api_base="http://127.0.0.1:8000/v1/", family_hints=["tiled", "persistent"]))
    s = p.settings()
    assert (s.model, s.fallbacks, s.temperature, s.max_tokens) == ("openai/gpt-4o-mini", ("openai/gpt-4.1-nano",), 0.3, 4000)
    assert (s.output_format, s.budget_usd, s.budget_tokens, s.strategy, s.n) == ("diff", 1.5, 100000, "best-of-n", 3)
    assert s.api_base == "http://127.0.0.1:8000/v1" and s.family_hints == ("tiled", "persistent")
    assert s.stream is True and s.retries == 3  # defaults
    assert p.prompt.startswith("You write fast")


@pytest.mark.parametrize("field,value", [
    ("temperature", "hot"), ("temperature", 3), ("max_tokens", 0), ("max_tokens", 1.5),
    ("output_format", "patch"), ("strategy", "greedy"), ("n", 0), ("budget_usd", -1),
    ("budget_tokens", "lots"), ("api_base", "localhost:8000"), ("fallbacks", "[gpt 4]"),
    ("stream", "yes"), ("temprature", 0.2),
])
def test_a_malformed_field_is_one_line_naming_file_and_field(write_profile, field, value):
    path = write_profile(proposer="llm", model="openai/gpt-4o-mini", **{field: value})
    with pytest.raises(ProfileError) as info:
        parse_profile(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg and f"'{field}'" in msg


def test_llm_profile_without_model_is_refused(write_profile):
    with pytest.raises(ProfileError, match="field 'model' is required"):
        parse_profile(write_profile(proposer="llm", temperature=0.2))


def test_best_of_n_needs_n_of_at_least_two(write_profile):
    with pytest.raises(ProfileError, match="field 'n'"):
        parse_profile(write_profile(proposer="llm", model="openai/x", strategy="best-of-n"))


def test_shipped_profiles_parse_and_advisor_is_stronger_for_escalation():
    names = {p.name: p for p in list_profiles() if not isinstance(p, Exception)}
    assert {"default", "refiner", "advisor", "tuner"} <= set(names)
    assert not [p for p in list_profiles() if isinstance(p, Exception)]
    assert names["default"].settings().advisor == "advisor"
    assert names["refiner"].settings().output_format == "diff"
    assert names["advisor"].settings().model != names["default"].settings().model


def test_make_proposer_returns_the_llm_proposer_for_llm_profiles():
    from cockpit.agents.llm import LLMProposer
    from cockpit.agents.tuner import Tuner

    assert isinstance(make_proposer(load_profile("default")), LLMProposer)
    assert isinstance(make_proposer(load_profile("tuner")), Tuner)


def test_an_advisor_that_does_not_exist_is_refused_when_the_proposer_is_made(write_profile):
    path = write_profile(proposer="llm", model="openai/gpt-4o-mini", advisor="nobody")
    with pytest.raises(ProfileError) as info:
        make_proposer(parse_profile(path))
    assert str(path) in str(info.value) and "'advisor'" in str(info.value) and "\n" not in str(info.value)
