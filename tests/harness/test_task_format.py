"""Task folders (task.toml + reference.py + seeds/): malformed ones raise TaskError with one line
naming the file and the field; roofline formulas are arithmetic only, and evaluate."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from judge_helpers import KERNELS

from cockpit.harness.task import TaskError, eval_formula, find_task, list_tasks, load_task

SOFTMAX = KERNELS / "softmax"


def _broken_task(tmp_path: Path, edit: Callable[[str], str], *, drop: str | None = None) -> Path:
    """A copy of the softmax task folder with task.toml rewritten by `edit`."""
    root = tmp_path / "broken"
    shutil.copytree(SOFTMAX, root, ignore=shutil.ignore_patterns("__pycache__"))
    toml = root / "task.toml"
    new = edit(toml.read_text())
    toml.write_text(new)
    if drop:
        (root / drop).unlink()
    return root


def _replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, f"softmax task.toml no longer contains {old!r}; update the test"
        return text.replace(old, new, 1)

    return edit


def _error(root: Path) -> str:
    with pytest.raises(TaskError) as info:
        load_task(root)
    message = str(info.value)
    assert "\n" not in message, f"TaskError must be one line: {message!r}"
    return message


def test_missing_required_field_names_the_file_and_the_field(tmp_path):
    msg = _error(_broken_task(tmp_path, _replace('outputs = ["y"]\n', "")))
    assert str(tmp_path / "broken" / "task.toml") in msg and "'outputs'" in msg


def test_missing_nested_roofline_field_names_it_with_its_table(tmp_path):
    msg = _error(_broken_task(tmp_path, _replace('bytes = "2 * rows * cols * itemsize"\n', "")))
    assert "task.toml" in msg and "roofline.bytes" in msg


def test_invalid_toml_names_the_file_and_the_position(tmp_path):
    msg = _error(_broken_task(tmp_path, _replace('name = "softmax"', 'name = "softmax')))
    assert "task.toml" in msg and "invalid TOML" in msg and re.search(r"line \d+", msg)


def test_field_of_the_wrong_type_names_the_field(tmp_path):
    msg = _error(_broken_task(tmp_path, _replace('inputs = ["x"]', 'inputs = "x"')))
    assert "task.toml" in msg and "'inputs'" in msg


def test_unknown_dtype_names_the_shape_entry(tmp_path):
    msg = _error(_broken_task(tmp_path, _replace(
        '{ rows = 8, cols = 64, dtype = "float32" }', '{ rows = 8, cols = 64, dtype = "float8" }')))
    assert "task.toml" in msg and "shapes.cpu.public[0]" in msg and "'float8'" in msg


def test_tolerance_without_rtol_names_the_dtype(tmp_path):
    msg = _error(_broken_task(tmp_path, _replace(
        "float32 = { atol = 1e-6, rtol = 1e-5 }", "float32 = { atol = 1e-6 }")))
    assert "task.toml" in msg and "tolerance.float32" in msg


def test_missing_reference_names_the_reference_file(tmp_path):
    msg = _error(_broken_task(tmp_path, lambda s: s, drop="reference.py"))
    assert str(tmp_path / "broken" / "reference.py") in msg


def test_formula_with_a_function_call_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    formula = f"__import__('os').system('touch {marker}')"
    root = _broken_task(tmp_path, _replace('flops = "5 * rows * cols"', f'flops = "{formula}"'))
    msg = _error(root)
    assert "only arithmetic" in msg
    assert not marker.exists(), "the formula was executed"


@pytest.mark.parametrize("formula", [
    "rows.__class__", "(lambda: 1)()", "[rows][0]", "rows if cols else 1", "abs(rows)", "'a' * 3",
])
def test_formula_refuses_everything_but_arithmetic_over_shape_keys(formula):
    with pytest.raises(TaskError):
        eval_formula(formula, {"rows": 2.0, "cols": 3.0})


def test_formula_error_names_the_file_and_the_field(tmp_path):
    root = _broken_task(tmp_path, _replace('flops = "5 * rows * cols"', 'flops = "5 * rowz"'))
    msg = _error(root)
    assert "task.toml" in msg and "roofline.flops" in msg


def test_formula_with_an_unknown_name_says_which_name():
    with pytest.raises(TaskError, match="'rowz'"):
        eval_formula("5 * rowz", {"rows": 1.0})


def test_formula_syntax_error_is_a_task_error():
    with pytest.raises(TaskError):
        eval_formula("5 * (rows", {"rows": 1.0})


def test_roofline_formulas_evaluate_with_shape_keys_and_itemsize():
    task = load_task("softmax")
    shape = next(s for s in task.shape_set("cpu", "public") if s.dtype == "bfloat16")
    flops, nbytes = task.floor_inputs(shape)
    rows, cols = shape.params["rows"], shape.params["cols"]
    assert flops == 5 * rows * cols
    assert nbytes == 2 * rows * cols * 2  # bfloat16: itemsize 2


def test_formula_arithmetic_and_the_allowed_functions():
    env = {"n": 8.0, "batch": 3.0}
    assert eval_formula("batch * (4 / 3) * n ** 3", env) == pytest.approx(3 * 4 / 3 * 512)
    assert eval_formula("max(n, 10) + min(n, 2) - ceil(n / 3) + sqrt(n * 2) + log2(n)", env) == pytest.approx(
        10 + 2 - 3 + 4 + 3)
    assert eval_formula("-n // 3 + n % 3", env) == pytest.approx(-3 + 2)


def test_every_shipped_task_loads_and_every_formula_evaluates_on_every_shape():
    tasks = list_tasks(KERNELS)
    assert any(p.name == "softmax" for p in tasks)
    for root in tasks:
        task = load_task(root)
        for device in ("cpu", "cuda"):
            for set_name in ("public", "hidden", "benchmark"):
                for shape in task.shape_set(device, set_name):
                    flops, nbytes = task.floor_inputs(shape)
                    assert flops >= 0 and nbytes > 0, (task.name, shape.describe())


def test_find_task_refuses_a_folder_without_task_toml(tmp_path):
    with pytest.raises(TaskError, match="not a task folder"):
        find_task(tmp_path)
    with pytest.raises(TaskError, match="unknown task"):
        find_task("no-such-task-name", KERNELS)


@pytest.mark.parametrize("value", ['"wall"', '"end-to-end"', "1"])
def test_a_bad_timing_is_a_one_line_error_naming_the_field(tmp_path, value):
    msg = _error(_broken_task(tmp_path, _replace('inputs = ["x"]', f'timing = {value}\ninputs = ["x"]')))
    assert "task.toml" in msg and "'timing'" in msg


def test_timing_defaults_to_kernel_and_decode_is_timed_end_to_end(tmp_path):
    assert load_task(SOFTMAX).timing == "kernel"
    assert load_task("decode").timing == "end_to_end"
    root = _broken_task(tmp_path, _replace('inputs = ["x"]', 'timing = "end_to_end"\ninputs = ["x"]'))
    assert load_task(root).timing == "end_to_end"
