"""Bad input everywhere, as a user meets it: each case runs the real `cockpit` command in a
subprocess and must end with exit 2, exactly one line on stderr naming the file and the field,
and no traceback. Nothing is left behind (no session folder for a run that was refused). Also:
recorded text that looks like rich markup is shown as it is, never interpreted.

The task cases edit a copy of the toy task (tests/engine/toytask); `cockpit eval` and `cockpit
run` read task.toml before importing torch, so those cases take a fraction of a second each.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOYTASK = ROOT / "tests/engine/toytask"
SEED = TOYTASK / "seeds/vectorized.py"


def cockpit(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cockpit.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})},
        cwd=ROOT,
    )


def assert_one_line_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, one line on stderr that names every needle, no traceback anywhere."""
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out
    assert r.returncode == 2, (r.returncode, out)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("cockpit: error: "), r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)
    return r.stderr


# --- task.toml -----------------------------------------------------------------------------------
Edit = Callable[[str], str]


def sub(old: str, new: str) -> Edit:
    def edit(text: str) -> str:
        assert old in text, f"the toy task.toml no longer contains {old!r}; update the case"
        return text.replace(old, new, 1)

    return edit


def top(key: str, value: str | None) -> Edit:
    """Set (or, with None, drop) a one-line top-level field."""

    def edit(text: str) -> str:
        text = re.sub(rf"^{re.escape(key)} = .*\n", "", text, flags=re.M)
        return text if value is None else f"{key} = {value}\n" + text

    return edit


def append(table: str) -> Edit:
    return lambda text: text + "\n" + table + "\n"


CPU_PUBLIC = '[shapes.cpu]\npublic = [{ rows = 64, cols = 16, dtype = "float32" }]'


def cpu_shape(extra: str) -> Edit:
    return sub(CPU_PUBLIC, f'[shapes.cpu]\npublic = [{{ rows = 64, cols = 16, {extra} }}]')


TOLERANCE = "float32 = { atol = 1e-6, rtol = 1e-6 }"
# (id, edit, what the one line must name besides the file)
TASK_CASES: list[tuple[str, Edit, list[str]]] = [
    ("toml-syntax", sub('name = "toyscale"', 'name = "toyscale'), ["invalid TOML", "line 1"]),
    ("toml-duplicate-key", top("inputs", '["x"]\ninputs = ["x"]'), ["invalid TOML"]),
    ("name-missing", top("name", None), ["missing field 'name'"]),
    ("name-wrong-type", top("name", "3"), ["'name'", "a string"]),
    ("name-empty", top("name", '" "'), ["'name'", "empty"]),
    ("unknown-field", top("time_limit", "60"), ["unknown field 'time_limit'"]),
    ("unknown-table", append("[extras]\na = 1"), ["unknown field 'extras'"]),
    ("inputs-not-a-list", top("inputs", '"x"'), ["'inputs'"]),
    ("inputs-not-strings", top("inputs", "[1]"), ["'inputs'"]),
    ("inputs-empty", top("inputs", "[]"), ["'inputs'"]),
    ("outputs-missing", top("outputs", None), ["missing field 'outputs'"]),
    ("summary-wrong-type", top("summary", "3"), ["'summary'"]),
    ("signature-wrong-type", top("signature", '["a"]'), ["'signature'"]),
    ("hidden-hint-wrong-type", top("hidden_hint", "true"), ["'hidden_hint'"]),
    ("forbidden-a-string", top("forbidden", '"torch.softmax"'), ["'forbidden'"]),
    ("forbidden-ops-numbers", top("forbidden_ops", "[1]"), ["'forbidden_ops'"]),
    ("batch-inputs-not-an-input", top("batch_inputs", '["z"]'), ["'batch_inputs'", "'z'"]),
    ("baseline-seeds-a-string", top("baseline_seeds", '"a.py"'), ["'baseline_seeds'"]),
    ("allow-inplace-a-string", top("allow_inplace", '"no"'), ["'allow_inplace'"]),
    ("contiguous-outputs-a-number", top("contiguous_outputs", "1"), ["'contiguous_outputs'"]),
    ("time-limit-a-string", top("time_limit_s", '"fast"'), ["'time_limit_s'"]),
    ("time-limit-negative", top("time_limit_s", "-1"), ["'time_limit_s'"]),
    ("time-limit-nan", top("time_limit_s", "nan"), ["'time_limit_s'"]),
    ("tolerance-missing", sub("[tolerance]\n" + TOLERANCE + "\n", ""), ["'tolerance'"]),
    ("tolerance-not-a-table",
     lambda t: "tolerance = 1\n" + sub("[tolerance]\n" + TOLERANCE + "\n", "")(t), ["'tolerance'"]),
    ("tolerance-no-rtol", sub(TOLERANCE, "float32 = { atol = 1e-6 }"), ["tolerance.float32"]),
    ("tolerance-atol-a-string", sub(TOLERANCE, 'float32 = { atol = "small", rtol = 1e-6 }'),
     ["tolerance.float32.atol"]),
    ("tolerance-negative", sub(TOLERANCE, "float32 = { atol = 1e-6, rtol = -1 }"),
     ["tolerance.float32.rtol"]),
    ("tolerance-unknown-key", sub(TOLERANCE, "float32 = { atol = 0, rtol = 0, btol = 0 }"),
     ["tolerance.float32.btol"]),
    ("tolerance-unknown-dtype", sub(TOLERANCE, TOLERANCE + "\nfloat8 = { atol = 0, rtol = 0 }"),
     ["tolerance.float8"]),
    ("roofline-flops-missing", sub('flops = "2 * rows * cols"\n', ""), ["roofline.flops"]),
    ("roofline-flops-a-number", sub('flops = "2 * rows * cols"', "flops = 2"), ["roofline.flops"]),
    ("roofline-flops-unknown-name", sub('flops = "2 * rows * cols"', 'flops = "2 * rowz"'),
     ["roofline.flops", "'rowz'"]),
    ("roofline-flops-code", sub('flops = "2 * rows * cols"', "flops = \"__import__('os')\""),
     ["roofline.flops", "only arithmetic"]),
    ("roofline-peak", sub('flops = "2 * rows * cols"', 'flops = "1"\npeak = "fp64"'),
     ["roofline.peak"]),
    ("roofline-unknown-key", sub('flops = "2 * rows * cols"', 'flops = "1"\nlatency = "1"'),
     ["roofline.latency"]),
    ("shapes-unknown-set", sub("[shapes]\npublic", "[shapes]\npublik"), ["shapes.publik"]),
    ("shapes-public-missing", sub('[shapes]\npublic = [{ rows = 64, cols = 16, dtype = "float32" }]\n',
                                  "[shapes]\n"), ["shapes.public"]),
    ("shapes-cpu-unknown-set", sub(CPU_PUBLIC, CPU_PUBLIC + "\ntiny = []"), ["shapes.cpu.tiny"]),
    ("shapes-cpu-public-not-a-list", sub(CPU_PUBLIC, '[shapes.cpu]\npublic = "64x16"'),
     ["shapes.cpu.public"]),
    ("shape-dtype", cpu_shape('dtype = "float8"'), ["shapes.cpu.public[0].dtype", "'float8'"]),
    ("shape-key-a-list", cpu_shape("dtype = \"float32\", n = [1, 2]"), ["shapes.cpu.public[0].n"]),
    ("shape-weight", cpu_shape("weight = 0"), ["shapes.cpu.public[0].weight"]),
    ("shape-timed", cpu_shape('timed = "yes"'), ["shapes.cpu.public[0].timed"]),
    ("shape-tier", cpu_shape('tier = "later"'), ["shapes.cpu.public[0].tier"]),
    ("shape-label", cpu_shape("label = 3"), ["shapes.cpu.public[0].label"]),
    ("limits-negative", append("[limits]\ncall_floor_s = -1"), ["limits.call_floor_s"]),
    ("limits-unknown", append("[limits]\nhang_s = 3"), ["limits.hang_s"]),
    ("report-unit", append("[report]\nunit = 3"), ["report.unit"]),
    ("constants-not-a-table", top("constants", "3"), ["'constants'"]),
    ("constants-a-list", append("[constants]\neps = [1]"), ["constants.eps"]),
]


def toy_task(tmp_path: Path, edit: Edit | None = None) -> Path:
    root = tmp_path / "task"
    shutil.copytree(TOYTASK, root, ignore=shutil.ignore_patterns("__pycache__"))
    if edit:
        toml = root / "task.toml"
        toml.write_text(edit(toml.read_text()))
    return root


@pytest.mark.parametrize("edit, needles", [c[1:] for c in TASK_CASES], ids=[c[0] for c in TASK_CASES])
def test_a_malformed_task_toml_is_one_line_naming_the_file_and_the_field(tmp_path, edit, needles):
    root = toy_task(tmp_path, edit)
    r = cockpit("eval", str(root), str(SEED), "--device", "cpu", "--quick", "--json")
    assert r.stdout == ""
    assert_one_line_error(r, str(root / "task.toml"), *needles)


@pytest.mark.parametrize("case", ["toml-syntax", "unknown-field", "shape-timed", "roofline-peak"])
def test_cockpit_run_refuses_a_malformed_task_before_any_session_exists(tmp_path, case):
    edit, needles = next(c[1:] for c in TASK_CASES if c[0] == case)
    root = toy_task(tmp_path, edit)
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(root), "--device", "cpu", "--budget", "1", "--sessions-dir", str(sessions))
    assert_one_line_error(r, str(root / "task.toml"), *needles)
    assert not sessions.exists()


def test_a_task_toml_that_is_not_utf8_is_one_line(tmp_path):
    root = toy_task(tmp_path)
    (root / "task.toml").write_bytes(b'name = "toy\xff"\n')
    r = cockpit("eval", str(root), str(SEED), "--device", "cpu", "--quick")
    assert_one_line_error(r, str(root / "task.toml"), "UTF-8")


def test_every_shipped_task_still_loads_under_the_strict_fields():
    r = cockpit("tasks", "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert "task.toml" not in r.stdout  # an error row would name its file
    import json

    assert {"softmax", "rmsnorm", "qr", "decode"} <= {t["name"] for t in json.loads(r.stdout)}


# --- reference.py --------------------------------------------------------------------------------
REFERENCE_CASES = {
    "raises-at-import": ('raise RuntimeError("boom at import")\n', ["at import", "boom at import"]),
    "syntax-error": ("def reference(x):\n    return x +\n", ["syntax error", "line"]),
    "reference-raises": (
        'def reference(x):\n    raise RuntimeError("boom in reference")\n',
        ["reference()", "RuntimeError: boom in reference", "line"],
    ),
    "make-inputs-raises": (
        "def make_inputs(shape, seed, device):\n    return shape['no_such_key']\n",
        ["make_inputs()", "KeyError", "line"],
    ),
    "no-reference-function": ("del reference\n", ["missing function 'reference'"]),
}


def broken_reference(tmp_path: Path, case: str) -> tuple[Path, list[str]]:
    tail, needles = REFERENCE_CASES[case]
    root = toy_task(tmp_path)
    ref = root / "reference.py"
    ref.write_text(ref.read_text() + "\n" + tail)
    return root, [str(ref), *needles]


@pytest.mark.parametrize("case", list(REFERENCE_CASES))
def test_a_reference_that_raises_is_one_line_in_cockpit_eval(tmp_path, case):
    root, needles = broken_reference(tmp_path, case)
    r = cockpit("eval", str(root), str(SEED), "--device", "cpu", "--quick", "--json")
    assert r.stdout == ""
    assert_one_line_error(r, *needles)


@pytest.mark.parametrize("case", ["raises-at-import", "reference-raises", "make-inputs-raises"])
def test_a_reference_that_raises_stops_cockpit_run_before_any_session_exists(tmp_path, case):
    root, needles = broken_reference(tmp_path, case)
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(root), "--device", "cpu", "--budget", "1", "--sessions-dir", str(sessions))
    assert_one_line_error(r, *needles)
    assert not sessions.exists()


HIDDEN_ONLY = """
_make_inputs = make_inputs


def make_inputs(shape, seed, device):
    if shape["rows"] == 37:  # the toy task's hidden shape only: the start-up check passes
        raise ValueError("cannot build these inputs")
    return _make_inputs(shape, seed, device)
"""


def test_a_reference_that_raises_on_a_hidden_shape_only(tmp_path):
    """Mid-evaluation: `cockpit eval` is one line, exit 2; a `cockpit run` stops `stopped` after
    the first evaluation with the reason naming reference.py (not a budget of crashes)."""
    import json

    root = toy_task(tmp_path)
    ref = root / "reference.py"
    ref.write_text(ref.read_text() + HIDDEN_ONLY)
    r = cockpit("eval", str(root), str(SEED), "--device", "cpu", "--quick", "--json")
    assert_one_line_error(r, str(ref), "make_inputs() raised ValueError: cannot build these inputs")
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(root), "--session", "broken", "--agent", "tuner", "--budget", "6",
                "--beam", "1", "--device", "cpu", "--mode", "quick", "--sessions-dir", str(sessions),
                timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    st = cockpit("status", "broken", "--json", "--sessions-dir", str(sessions))
    d = json.loads(st.stdout)
    assert d["state"] == "stopped", d
    assert "the task is broken" in d["reason"] and str(ref) in d["reason"], d["reason"]
    assert "cockpit resume broken" in d["reason"]
    assert 1 <= d["evaluations"] < 6
    assert {c["status"] for c in d["candidate_list"] if c["status"] != "proposed"} == {"crash"}
    # fixed, the same session goes on to the end of its budget
    ref.write_text((TOYTASK / "reference.py").read_text())
    r = cockpit("resume", "broken", "--sessions-dir", str(sessions), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(cockpit("status", "broken", "--json", "--sessions-dir", str(sessions)).stdout)
    assert d["state"] == "done" and d["evaluations"] == 6, d
    assert "ok" in {c["status"] for c in d["candidate_list"]}


# --- agent profiles and model names --------------------------------------------------------------
PROFILE_CASES: list[tuple[str, bytes, list[str]]] = [
    ("no-front-matter", b"You write kernels.\n", ["front matter"]),
    ("not-closed", b"---\nproposer: llm\nmodel: openai/x\n", ["not closed"]),
    ("not-key-value", b"---\nproposer: llm\nmodel openai/x\n---\n", ["line 3", "key: value"]),
    ("unknown-field", b"---\nproposer: llm\nmodel: openai/x\ntemprature: 0.2\n---\n",
     ["'temprature'"]),
    ("wrong-type", b"---\nproposer: llm\nmodel: openai/x\ntemperature: hot\n---\n",
     ["'temperature'"]),
    ("out-of-range", b"---\nproposer: llm\nmodel: openai/x\nmax_calls_per_eval: 0\n---\n",
     ["'max_calls_per_eval'"]),
    ("model-missing", b"---\nproposer: llm\ntemperature: 0.2\n---\n", ["'model'"]),
    ("model-given-twice", b"---\nproposer: llm\nmodel: openai/x\nmodel: openai/y\n---\n",
     ["'model'", "twice"]),
    ("unknown-proposer", b"---\nproposer: gpt\n---\n", ["'proposer'"]),
    ("unknown-provider", b"---\nproposer: llm\nmodel: nosuchprovider/coder\n---\n",
     ["'model'", "nosuchprovider/coder"]),
    ("unknown-fallback", b"---\nproposer: llm\nmodel: openai/x\nfallbacks: [openai/y, gtp4]\n---\n",
     ["'fallbacks'", "'gtp4'"]),
    ("not-utf8", b"---\nproposer: llm\nmodel: openai/\xff\n---\n", ["cannot be read"]),
]


@pytest.mark.parametrize("text, needles", [c[1:] for c in PROFILE_CASES], ids=[c[0] for c in PROFILE_CASES])
def test_a_malformed_agent_profile_is_one_line_naming_the_file_and_the_field(tmp_path, text, needles):
    profile = tmp_path / "agents" / "mine.md"
    profile.parent.mkdir()
    profile.write_bytes(text)
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(TOYTASK), "--agent", str(profile), "--device", "cpu", "--budget", "1",
                "--sessions-dir", str(sessions))
    assert_one_line_error(r, str(profile), *needles)
    assert not sessions.exists()


@pytest.mark.parametrize("model, needles", [
    ("nosuchprovider/coder", ["--model", "'nosuchprovider/coder'", "no provider"]),
    ("gtp-4o", ["--model", "'gtp-4o'", "no provider"]),
    ("bad model", ["--model", "no spaces"]),
])
def test_an_unknown_model_string_is_refused_before_any_session_exists(tmp_path, model, needles):
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(TOYTASK), "--agent", "default", "--model", model, "--device", "cpu",
                "--budget", "1", "--sessions-dir", str(sessions), "--session", "m")
    assert_one_line_error(r, *needles)
    assert not sessions.exists()


@pytest.mark.parametrize("url", [
    "https://me:sk-live-1234567890@api.example.com/v1",
    "https://sk-live-1234567890@api.example.com/v1",
    "http://127.0.0.1:8000/v1?api-key=sk-live-1234567890",
    "https://gw.example.com/openai?x=1&access_token=sk-live-1234567890",
])
def test_an_api_base_that_carries_a_credential_is_refused_without_repeating_it(tmp_path, url):
    """The base URL is recorded with the session (resume needs it): a key in it would be too."""
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(TOYTASK), "--agent", "default", "--model", "openai/gpt-4o-mini",
                "--api-base", url, "--device", "cpu", "--budget", "1",
                "--sessions-dir", str(sessions), "--session", "k")
    line = assert_one_line_error(r, "--api-base", "carries a credential", "OPENAI_API_KEY")
    assert "sk-live" not in r.stdout + line
    assert not sessions.exists()


def test_an_agent_profile_whose_api_base_carries_a_credential_is_refused(tmp_path):
    profile = tmp_path / "agents" / "mine.md"
    profile.parent.mkdir()
    profile.write_text("---\nproposer: llm\nmodel: openai/x\n"
                       "api_base: https://u:sk-live-1234567890@h.example.com/v1\n---\n")
    r = cockpit("run", str(TOYTASK), "--agent", str(profile), "--device", "cpu", "--budget", "1",
                "--sessions-dir", str(tmp_path / "sessions"))
    line = assert_one_line_error(r, str(profile), "'api_base'", "carries a credential")
    assert "sk-live" not in line


def test_an_api_base_with_ordinary_query_parameters_is_accepted():
    from cockpit.agents.profiles import LLM_FIELDS

    url = "https://gw.example.com/openai/v1?api-version=2024-06-01&deployment=gpt"
    assert LLM_FIELDS["api_base"](url + "/") == url


def test_an_unknown_agent_name_lists_the_known_ones(tmp_path):
    r = cockpit("run", str(TOYTASK), "--agent", "nosuch", "--device", "cpu",
                "--sessions-dir", str(tmp_path / "s"))
    assert_one_line_error(r, "unknown agent profile 'nosuch'", "default", "tuner")


# --- session names -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["a/b", "..", "../escape", "", ".hidden", "-rf", "x\n", "a b"])
def test_a_bad_session_name_is_one_line_and_makes_nothing(tmp_path, name):
    sessions = tmp_path / "sessions"
    r = cockpit("run", str(TOYTASK), f"--session={name}", "--device", "cpu", "--budget", "1",
                "--sessions-dir", str(sessions))
    assert_one_line_error(r, "--session", "bad session name", repr(name))
    assert not sessions.exists() and not (tmp_path / "escape").exists()


# --- the cockpit's keymap / config file ----------------------------------------------------------
@pytest.fixture(scope="module")
def a_session(tmp_path_factory) -> Path:
    from cockpit.store import create_session

    return create_session("keys", task="toyscale", device="cpu",
                          sessions_dir=tmp_path_factory.mktemp("sessions"))


KEYMAP_CASES: list[tuple[str, str, list[str]]] = [
    ("toml-syntax", '[keys]\n"cockpit.fork" = "F\n', ["invalid TOML", "line 2"]),
    ("unknown-binding-id", '[keys]\n"cockpit.frok" = "F"\n', ["'cockpit.frok'", "unknown binding id",
                                                            "'cockpit.fork'"]),
    ("bad-key-name", '[keys]\n"cockpit.fork" = "notakey"\n', ["'cockpit.fork'", "'notakey'"]),
    ("bad-modifier", '[keys]\n"cockpit.fork" = "ctl+f"\n', ["'cockpit.fork'", "'ctl'"]),
    ("empty-key-in-list", '[keys]\n"cockpit.fork" = "F,"\n', ["'cockpit.fork'", "empty key"]),
    ("modifier-without-key", '[keys]\n"cockpit.fork" = "ctrl+"\n', ["'cockpit.fork'", "no key"]),
    ("key-not-a-string", '[keys]\n"cockpit.fork" = 3\n', ["[keys]"]),
    ("keys-not-a-table", 'keys = "F"\n', ["[keys]"]),
    ("unknown-field", 'notify_comand = "echo"\n', ["'notify_comand'"]),
    ("notify-on", 'notify_on = ["everything"]\n', ["notify_on"]),
    ("notify-timeout", "notify_timeout_s = -1\n", ["notify_timeout_s"]),
    ("notify-command-empty", 'notify_command = " "\n', ["notify_command"]),
]


@pytest.mark.parametrize("text, needles", [c[1:] for c in KEYMAP_CASES], ids=[c[0] for c in KEYMAP_CASES])
def test_a_garbage_keymap_file_is_one_line_naming_it_and_the_field(tmp_path, a_session, text, needles):
    keys = tmp_path / "keys.toml"
    keys.write_text(text)
    r = cockpit("attach", str(a_session), env={"COCKPIT_KEYMAP": str(keys)})
    assert r.stdout == ""
    assert_one_line_error(r, str(keys), *needles)


def test_a_keymap_that_is_not_utf8_and_the_other_commands_that_read_it(tmp_path, a_session):
    keys = tmp_path / "keys.toml"
    keys.write_bytes(b'[keys]\n"cockpit.fork" = "\xff"\n')
    for args in (["attach", str(a_session)], ["replay", str(a_session)],
                 ["notify", str(a_session)]):
        r = cockpit(*args, env={"COCKPIT_KEYMAP": str(keys)})
        assert_one_line_error(r, str(keys), "UTF-8")


def test_every_shipped_binding_key_passes_the_key_check_and_a_good_file_loads(tmp_path):
    """The check refuses garbage, not the cockpit's own keys (nor the documented examples)."""
    import importlib
    import pkgutil

    import cockpit.tui.screens as screens
    from cockpit.tui.keymap import binding_ids, key_error, load_config

    for mod in pkgutil.iter_modules(screens.__path__):
        module = importlib.import_module(f"{screens.__name__}.{mod.name}")
        for cls in [v for v in vars(module).values() if isinstance(v, type)]:
            for b in getattr(cls, "BINDINGS", []):
                assert all(key_error(k) is None for k in b.key.split(",")), b.key
    assert {"cockpit.fork", "cockpit.toggle_branch", "replay.play", "dialog.cancel"} <= binding_ids()
    good = tmp_path / "keys.toml"
    good.write_text('notify_on = ["best"]\n[keys]\n"cockpit.toggle_branch" = "p"\n'
                    '"cockpit.fork" = "F,ctrl+f"\n"cockpit.filter" = "question_mark,f5"\n')
    assert load_config(good).keys["cockpit.fork"] == "F,ctrl+f"


# --- recorded text shown by the CLI --------------------------------------------------------------
HOSTILE = "credentials received: Bearer [redacted] then a stray [/dim] and [bold]x[/bold]"


def test_cockpit_status_shows_recorded_reasons_as_text_not_markup(tmp_path):
    """Reasons quote providers and candidates: `[redacted]` must show, `[/dim]` must not raise."""
    from cockpit.store import SessionRecord, create_session
    from cockpit.store import events as ev

    folder = create_session("hostile", task="toyscale", device="cpu", sessions_dir=tmp_path)
    with SessionRecord.open(folder) as rec:
        rec.append(ev.BRANCH_CREATED, {"family": "[red]chunked", "model": None,
                                        "parent_candidate": None, "instruction": None}, "b1")
        rec.append(ev.BRANCH_STATE, {"state": "paused", "reason": HOSTILE}, "b1")
        rec.append(ev.SESSION_STATE, {"state": "stopped", "reason": "quota [redacted] [/x]"})
    r = cockpit("status", str(folder), env={"COLUMNS": "250"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert HOSTILE in r.stdout and "quota [redacted] [/x]" in r.stdout and "[red]chunked" in r.stdout


def test_the_headless_printer_shows_recorded_text_as_text_not_markup():
    """A candidate whose exception says `[/x]` must not raise MarkupError in the engine's printer
    (it runs in the engine's thread: that would end the run)."""
    from cockpit.cli.loop import HeadlessPrinter

    printer = HeadlessPrinter(4)
    with printer.console.capture() as cap:
        printer("evaluation_finished", {"branch": "b1", "candidate": "c0002", "status": "error",
                                        "reasons": [{"kind": "exception", "message": HOSTILE}]})
        printer("proposal_failed", {"branch": "b1", "reason": HOSTILE})
        printer("proposal_cancelled", {"branch": "b1", "reason": HOSTILE})
        printer("branch_state", {"branch": "b1", "reason": HOSTILE})
        printer("command_acked", {"kind": "redirect", "ok": False, "message": HOSTILE})
        printer("best_changed", {"branch": "b1", "candidate": "c2", "score_us": 3.0, "why": HOSTILE})
    out = " ".join(cap.get().split())  # wrapped at the console's width
    assert out.count("[redacted] then a stray [/dim] and [bold]x[/bold]") == 6, out
