"""The ledger: sums per branch and per model; caps stop new calls exactly at the cap."""

from __future__ import annotations

import pytest

from cockpit.agents.costs import BudgetExceeded, Ledger


def test_spend_adds_up_per_branch_per_model_and_in_total():
    led = Ledger()
    led.record("b1", "openai/a", 100, 50, 0.01)
    led.record("b1", "anthropic/b", 200, 10, 0.02)
    led.record("b2", "openai/a", 5, 5, None)  # unpriced model
    s = led.summary()
    assert s["total"]["tokens"] == 370 and s["total"]["cost_usd"] == pytest.approx(0.03)
    assert s["branches"]["b1"]["calls"] == 2 and s["branches"]["b1"]["tokens"] == 360
    assert s["models"]["openai/a"]["prompt_tokens"] == 105 and s["models"]["openai/a"]["unpriced_calls"] == 1
    assert s["models"]["anthropic/b"]["cost_usd"] == pytest.approx(0.02)


def test_token_cap_refuses_the_first_call_at_or_past_the_cap():
    led = Ledger.with_caps(tokens=300)
    for _ in range(2):
        led.check("b1")
        led.record("b1", "m", 100, 50, 0.0)
    with pytest.raises(BudgetExceeded) as info:
        led.check("b1")  # 300 of 300: exactly at the cap, no new call
    assert info.value.scope == "session" and "300 of 300" in info.value.reason


def test_usd_cap_allows_calls_below_it():
    led = Ledger.with_caps(usd=0.05)
    led.record("b1", "m", 1, 1, 0.049)
    led.check("b1")
    led.record("b1", "m", 1, 1, 0.001)
    with pytest.raises(BudgetExceeded):
        led.check("b2")  # the session cap applies to every branch


def test_branch_cap_stops_only_that_branch():
    led = Ledger()
    led.set_branch_cap("b1", tokens=100)
    led.record("b1", "m", 80, 20, 0.0)
    with pytest.raises(BudgetExceeded) as info:
        led.check("b1")
    assert info.value.scope == "branch"
    led.check("b2")


def test_max_tokens_is_clamped_to_what_the_cap_leaves():
    led = Ledger.with_caps(tokens=1000)
    led.record("b1", "m", 600, 100, 0.0)
    assert led.max_tokens_left("b1", 8000) == 300
    assert led.max_tokens_left("b1", 200) == 200


def test_restore_rebuilds_the_sums_from_recorded_calls():
    led = Ledger.with_caps(tokens=150)
    led.restore([{"branch": "b1", "model": "m", "prompt_tokens": 100, "completion_tokens": 50, "cost_usd": 0.1}])
    assert led.summary()["branches"]["b1"]["cost_usd"] == pytest.approx(0.1)
    with pytest.raises(BudgetExceeded):
        led.check("b1")
