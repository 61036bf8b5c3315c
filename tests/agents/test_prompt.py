"""The prompt: task contract, hidden shapes as a hint only, branch code and history, compact
verifier feedback, human instructions and escalation."""

from __future__ import annotations

from agents_helpers import PARENT

from cockpit.agents.base import Attempt
from cockpit.agents.feedback import render_feedback
from cockpit.agents.profiles import LLMSettings
from cockpit.agents.prompt import build_messages, hidden_labels, task_for, user_prompt
from cockpit.harness.result import Result, ShapeResult, TimingStats

SETTINGS = LLMSettings(model="openai/gpt-4o-mini", family_hints=("online softmax",))
SECRET_HIDDEN = {"rows": 77731, "cols": 99173, "dtype": "float32"}


def timing(us: float) -> TimingStats:
    return TimingStats(n=30, mean_us=us, sem_pct=0.5, median_us=us, p10_us=us, p90_us=us, min_us=us,
                       max_us=us, total_ms=us * 30 / 1000)


def result_with_failures() -> dict:
    r = Result(task="softmax", candidate="c0007", device="cuda", score_us=812.0, geomean_us=700.0,
               hidden_geomean_us=950.0, roofline_pct=41.5, speedups={"torch_eager": 1.31})
    r.shapes = [
        ShapeResult("rows=4096 cols=1024 float32", "public", False, True, params={"rows": 4096, "cols": 1024}),
        ShapeResult("rows=4096 cols=4096 bfloat16", "public", False, False, params={"rows": 4096, "cols": 4096},
                    error={"tol_ratio": 3.2, "max_abs_err": 0.004, "bad": 12, "nonfinite": 0}),
        ShapeResult("rows=8192 cols=8192 bfloat16", "benchmark", False, True, timing=timing(640.0),
                    roofline_pct=55.0, bound="memory", params={"rows": 8192, "cols": 8192}),
        ShapeResult("rows=1 cols=1 float32", "hidden", True, True, timing=timing(4.2), params={"rows": 1, "cols": 1}),
        ShapeResult("rows=77731 cols=99173 float32", "hidden", True, False, params=SECRET_HIDDEN,
                    error={"tol_ratio": 7.5, "max_abs_err": 0.02, "bad": 3, "nonfinite": 1,
                           "where": [77730, 99172], "message": "worst row 77730 at [77730, 99172]"}),
    ]
    r.fail("numerical", "12 elements out of tolerance; worst row 17 at [17, 5]: got 0.1, want 0.2 "
                        "(3.2x the tolerance); max abs err 0.004", stage="verify", shape="rows=4096 cols=4096 bfloat16")
    r.fail("nan_inf", "1 NaN/Inf values where the reference is finite (first at row 77730); shape (77731, 99173)",
           stage="verify", shape="rows=77731 cols=99173 float32")
    r.fail("integrity", "timer patch: time.perf_counter was replaced by the candidate", stage="time")
    r.fail("hidden_work", "a thread kept running after the call returned (candidate_thread_42)", stage="time")
    r.profile = {"launches": 3, "unit": "device kernels", "groups": {"triton": 2, "aten": 1},
                 "top": [{"name": "softmax_kernel_0d1d", "calls": 2, "us": 600.0, "group": "triton"}],
                 "graphs": 1, "graph_break_count": 1, "graph_breaks": ["data-dependent branch (x1)"]}
    return r.to_dict()


def load_error_result() -> dict:
    r = Result(task="softmax", candidate="c0008", device="cuda")
    tb = "\n".join(["Traceback (most recent call last):",
                    '  File "/work/main/cockpit/harness/arena.py", line 88, in load',
                    "    spec.loader.exec_module(mod)",
                    '  File "/tmp/eval-abc123/c0008.py", line 3, in <module>',
                    "    import tritonx",
                    "ModuleNotFoundError: No module named 'tritonx'"])
    r.fail("missing_import", tb, stage="load")
    return r.to_dict()


def test_prompt_carries_contract_public_shapes_and_the_hidden_hint_only(request_for):
    req = request_for()
    text = user_prompt(req, SETTINGS, task_for(req))
    task = task_for(req)
    assert task.signature in text and task.summary in text
    assert "rows=4096 cols=1024 float32" in text  # a public shape
    assert task.hidden_hint in text and "verif" in text and "timed" in text
    for label in hidden_labels(task):
        assert label not in text
    assert PARENT.strip() in text and "algorithm family: baseline" in text
    assert "online softmax" in text  # the profile's family hints


def test_feedback_is_compact_and_hides_hidden_shape_parameters(request_for):
    req = request_for(parent_result=result_with_failures())
    text = user_prompt(req, SETTINGS, task_for(req))
    assert "3.2x the tolerance" in text and "rows=4096 cols=4096 bfloat16" in text  # public failure, full detail
    assert "hidden #2" in text and "7.5x the tolerance" in text and "1 NaN/Inf" in text  # hidden: sizes only
    assert "hidden #1: ✓ 4.2 us" in text
    for leak in ("77731", "99173", "77730", "99172"):
        assert leak not in text
    assert "640 us" in text and "55% of roofline (memory-bound)" in text
    assert "41.5% of roofline" in text and "1.31x vs torch_eager" in text
    assert "3 device kernels per call (triton 2, aten 1)" in text and "softmax_kernel_0d1d" in text
    assert "1 graph breaks: data-dependent branch" in text


def test_host_bound_shapes_are_named_without_revealing_hidden_ones():
    r = result_with_failures()
    r["flags"] = [
        "host-bound: rows=8192 cols=8192 bfloat16: 900 us on the host to launch one call against "
        "640 us on the GPU; back to back, calls would run at the host's pace",
        "host-bound: rows=1 cols=1 float32: 30 us on the host ...",
        "review: something else",
    ]
    text = render_feedback(r)
    assert (
        "benchmark: rows=8192 cols=8192 bfloat16: ✓ 640 us, 55% of roofline (memory-bound); "
        "host-bound" in text
    )
    assert "hidden #1: ✓ 4.2 us; host-bound" in text
    assert "rows=1 cols=1" not in text and "900 us" not in text
    assert "host-bound" not in render_feedback(result_with_failures())


def test_integrity_verdicts_are_named_generically():
    text = render_feedback(result_with_failures())
    assert "integrity:" in text and "hidden_work:" in text
    assert "perf_counter" not in text and "timer patch" not in text and "candidate_thread_42" not in text


def test_load_error_is_trimmed_to_the_candidates_frames():
    text = render_feedback(load_error_result())
    assert "No module named 'tritonx'" in text and 'File "c0008.py", line 3' in text
    assert "cockpit/harness" not in text and "exec_module" not in text and "/tmp/eval-abc123" not in text


def test_history_steer_queue_and_escalation_reach_the_prompt(request_for):
    req = request_for(history=[Attempt("c0005", "ok", 812.0, ""),
                               Attempt("c0006", "wrong", None, "numerical: 12 elements out of tolerance"),
                               Attempt("c0007", "rejected", None, "timer patch: perf_counter replaced")],
                      steer=["keep the kernel in Triton"], queued=["try BLOCK = 2048 once"], escalation="family")
    text = build_messages(req, SETTINGS, "SYSTEM BODY")[1]["content"]
    assert "c0005: ok, 812 us" in text and "c0006: wrong (numerical: 12 elements" in text
    assert "c0007: rejected (broke an evaluation rule)" in text and "perf_counter" not in text
    assert "keep the kernel in Triton" in text and "(this step only) try BLOCK = 2048 once" in text
    assert "ESCALATION" in text and "different algorithm family" in text


def test_system_message_is_the_profile_body_and_the_reply_format_ends_the_prompt(request_for):
    msgs = build_messages(request_for(), LLMSettings(model="m", output_format="diff"), "SYSTEM BODY")
    assert msgs[0] == {"role": "system", "content": "SYSTEM BODY"}
    assert "unified diff" in msgs[1]["content"].split("# Reply")[-1]


def test_a_native_code_rejection_is_named_by_its_class_with_what_native_code_may_not_do():
    r = Result(task="softmax", candidate="c0009", device="cuda")
    r.fail("native_code", "line 32: cpp_sources line 11: uses PyRun_SimpleString: calls the "
                          "Python C API", stage="load")  # fmt: skip
    text = render_feedback(r.to_dict())
    assert "native_code:" in text and "load_inline sources must be string constants" in text
    assert "PyRun_SimpleString" not in text
