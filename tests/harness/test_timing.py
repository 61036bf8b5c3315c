"""cockpit/harness/timing.py: the stopping rule, the summary statistics and the interleaved A/B
comparison of docs/harness-protocol.md. Pure functions, no processes."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from cockpit.harness.timing import (
    PRESETS,
    Policy,
    compare_interleaved,
    geomean,
    percentile,
    sem_ratio,
    should_stop,
    summarize,
)

POL = Policy()  # iterate defaults: >= 10 samples, >= 100 ms, SEM/mean < 0.5%


# --- should_stop ----------------------------------------------------------------------------


def test_keeps_sampling_below_the_minimum_sample_count_even_when_converged():
    assert should_stop([20_000.0] * 9, 0.2, POL) == ""


def test_keeps_sampling_below_the_minimum_measured_time_even_when_converged():
    assert should_stop([1.0] * 500, 0.1, POL) == ""  # 0.5 ms measured < 100 ms


def test_stops_as_converged_with_enough_samples_time_and_a_small_sem():
    assert should_stop([10_000.0] * 10, 0.2, POL) == "converged"  # 100 ms, SEM 0


def test_keeps_sampling_while_the_sem_is_above_the_target():
    noisy = [10_000.0, 20_000.0] * 10  # SEM/mean ~ 7.9%
    assert sem_ratio(noisy) > POL.target_sem
    assert should_stop(noisy, 1.0, POL) == ""


def test_final_ranking_needs_a_tighter_sem_than_iterating():
    rng = random.Random(1)
    samples = [1000.0 * (1 + rng.gauss(0, 0.02)) for _ in range(200)]  # SEM ~ 0.14%
    assert 0.001 < sem_ratio(samples) < 0.005
    assert should_stop(samples, 1.0, PRESETS["iterate"]) == "converged"
    assert should_stop(samples, 1.0, PRESETS["final"]) == ""


def test_stops_at_the_sample_cap():
    noisy = [1.0, 100.0] * 500
    assert should_stop(noisy, 1.0, POL) == "max_samples"


def test_stops_at_ten_seconds_of_measured_time():
    assert should_stop([1_000_000.0, 3_000_000.0] * 5 + [500.0], 11.0, POL) == "max_total"


def test_stops_at_the_wall_clock_limit():
    assert should_stop([1.0, 100.0] * 5, 120.0, POL) == "max_wall"


def test_sample_cap_is_checked_before_the_other_limits():
    assert should_stop([50_000.0] * 1000, 500.0, POL) == "max_samples"


def test_quick_preset_is_looser_than_iterate_on_every_limit():
    q, it = PRESETS["quick"], PRESETS["iterate"]
    assert q.min_samples < it.min_samples and q.min_total_ms < it.min_total_ms
    assert q.target_sem > it.target_sem and q.max_samples < it.max_samples
    assert q.check_calls >= 1, "quick mode still spot-checks timed calls"


def test_protocol_defaults_for_iterating():
    assert (POL.min_samples, POL.min_total_ms, POL.target_sem) == (10, 100.0, 0.005)
    assert (POL.max_total_ms, POL.max_wall_s, POL.max_samples) == (10_000.0, 120.0, 1000)
    assert POL.warmup_calls >= 3 and POL.warmup_ms >= 25.0
    assert PRESETS["final"].target_sem == 0.001


# --- summarize --------------------------------------------------------------------------------


def test_summary_reports_n_mean_sem_median_percentiles_min_max_and_total():
    samples = [float(v) for v in range(1, 11)]  # 1..10
    s = summarize(samples, host_us=[2.0 * v for v in samples], stop="converged")
    assert s.n == 10
    assert s.mean_us == pytest.approx(5.5)
    assert s.median_us == pytest.approx(5.5)
    assert s.min_us == 1.0 and s.max_us == 10.0
    assert s.p10_us == pytest.approx(1.9) and s.p90_us == pytest.approx(9.1)
    assert s.total_ms == pytest.approx(0.055)
    sem = statistics.stdev(samples) / math.sqrt(10) / 5.5 * 100
    assert s.sem_pct == pytest.approx(sem)
    assert s.host_median_us == pytest.approx(11.0)
    assert s.stop == "converged"


def test_summary_does_not_depend_on_sample_order():
    a = [3.0, 1.0, 2.0, 10.0, 4.0]
    assert summarize(a) == summarize(sorted(a))


def test_summary_of_one_sample_has_no_sem():
    s = summarize([7.0])
    assert s.n == 1 and s.median_us == 7.0 and math.isnan(s.sem_pct)
    assert s.host_median_us == 0.0


def test_percentile_interpolates_and_handles_edges():
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert percentile([5.0], 0.9) == 5.0
    assert math.isnan(percentile([], 0.5))


def test_sem_ratio_is_infinite_for_fewer_than_two_samples():
    assert sem_ratio([]) == math.inf and sem_ratio([3.0]) == math.inf


# --- compare_interleaved ----------------------------------------------------------------------


def _series(mean: float, rel_sd: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [mean * (1 + rng.gauss(0, rel_sd)) for _ in range(n)]


def test_five_percent_faster_with_tight_noise_counts_as_faster():
    a = _series(95.0, 0.005, 200, 1)
    b = _series(100.0, 0.005, 200, 2)
    c = compare_interleaved(a, b)
    assert c.faster
    assert c.ratio == pytest.approx(100 / 95, rel=0.005)
    assert c.ci_low > 1.0


def test_one_percent_faster_is_not_faster_even_with_tight_noise():
    a = _series(99.0, 0.001, 500, 3)
    b = _series(100.0, 0.001, 500, 4)
    c = compare_interleaved(a, b)
    assert c.ci_low > 1.0, "the gain is real (the interval excludes 1)..."
    assert not c.faster, "...but below the 3% threshold"


def test_five_percent_faster_with_huge_noise_is_not_faster():
    a = _series(95.0, 0.5, 20, 5)
    b = _series(100.0, 0.5, 20, 6)
    c = compare_interleaved(a, b)
    assert c.ci_low <= 1.0
    assert not c.faster


def test_slower_candidate_is_never_faster():
    c = compare_interleaved(_series(110.0, 0.001, 100, 7), _series(100.0, 0.001, 100, 8))
    assert c.ratio < 1 and not c.faster


def test_the_threshold_is_a_parameter():
    a = _series(98.0, 0.001, 500, 9)
    b = _series(100.0, 0.001, 500, 10)
    assert not compare_interleaved(a, b).faster
    assert compare_interleaved(a, b, min_gain=0.01).faster


def test_a_few_load_spikes_do_not_make_a_candidate_faster_than_itself():
    """The same kernel on both sides, with 4 of 40 rounds of B hit by a 3x spike (another
    process on a 2-core machine): the ratio of means would read ~1.2 with a narrow interval;
    the median of the per-round ratios stays at ~1 and its interval holds 1."""
    a = _series(100.0, 0.01, 40, 11)
    b = _series(100.0, 0.01, 40, 12)
    for i in (3, 11, 19, 27):
        b[i] *= 3.0
    assert statistics.fmean(b) / statistics.fmean(a) > 1.15  # what the old statistic saw
    c = compare_interleaved(a, b)
    assert c.ratio == pytest.approx(1.0, abs=0.01)
    assert c.ci_low <= 1.0 <= c.ci_high
    assert not c.faster


def test_rounds_are_paired_so_drift_that_hits_both_sides_cancels():
    """Both kernels slow down together over the run (clocks, heat: +100% from first to last
    round) and A is 5% faster in every round: each round's ratio is 1.05 exactly, so A is
    faster with a tight interval, although each side's own spread is large."""
    a = [95.0 * (1 + i / 100) for i in range(100)]
    b = [100.0 * (1 + i / 100) for i in range(100)]
    c = compare_interleaved(a, b)
    assert c.ratio == pytest.approx(100 / 95) and c.ci_low == pytest.approx(100 / 95)
    assert c.faster


def test_few_rounds_give_the_whole_range_as_the_interval():
    """Under 6 rounds the sign test cannot exclude 1 at 95%: the interval is the range of the
    ratios, and the verdict needs every round to agree."""
    c = compare_interleaved([100.0, 100.0, 100.0], [110.0, 104.0, 98.0])
    assert (c.ci_low, c.ratio, c.ci_high) == pytest.approx((0.98, 1.04, 1.10))
    assert not c.faster
    assert compare_interleaved([100.0] * 5, [110.0, 104.0, 108.0, 106.0, 120.0]).faster
    empty = compare_interleaved([], [])
    assert math.isnan(empty.ratio) and not empty.faster


# --- geomean ----------------------------------------------------------------------------------


def test_geomean_weights_and_empty_input():
    assert geomean([1.0, 100.0]) == pytest.approx(10.0)
    assert geomean([1.0, 100.0], [1.0, 3.0]) == pytest.approx(100 ** 0.75)
    assert math.isnan(geomean([]))
