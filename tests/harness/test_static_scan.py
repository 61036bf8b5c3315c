"""The static scan (`static_scan.scan`, a pure function): every adversarial file a static rule is
meant for is caught with a clear message, and no correct candidate or shipped seed is flagged.

No processes: each test parses one source.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from judge_helpers import ADVERSARIAL, KERNELS, UNUSUAL, task_for, task_or_skip

from cockpit.harness.static_scan import scan
from cockpit.harness.task import list_tasks, load_task

# file -> (finding kind, regex one finding's message must match)
STATIC_CATCHES: dict[str, tuple[str, str]] = {
    "builtins_patch.py": ("static_rule", r"imports builtins"),
    "checker_patch.py": ("static_rule", r"assigns torch\.allclose: monkeypatches torch"),
    "exit_during_call.py": ("static_rule", r"uses \._exit: ends the process"),
    "late_write_thread.py": ("static_rule", r"imports threading"),
    "network_exfiltration.py": ("static_rule", r"imports socket"),
    "precision_matmul.py": ("static_rule", r"set_float32_matmul_precision"),
    "precision_tf32.py": ("static_rule", r"allow_tf32"),
    "read_hidden_shapes.py": ("static_rule", r"open\(\)"),
    "thread_pool.py": ("static_rule", r"set_num_threads"),
    "timer_patch.py": ("static_rule", r"perf_counter"),
    "qr_importlib_linalg_qr.py": ("static_rule", r"imports importlib"),
    "qr_numpy_computed.py": ("static_rule", r"imports importlib"),
    "qr_geqrf_in_thread.py": ("static_rule", r"imports threading"),
    # Reaching into the harness's own state: the notes rely on the static ban of introspection
    # (gc, inspect, _getframe, ctypes) for this residual risk; these files get there without them.
    "spotcheck_dodge.py": ("static_rule", r"traceback|stack|frame"),
    "qr_disarm_recorder.py": ("static_rule", r"traceback|frame|f_back|f_locals"),
    "timer_patch_arena_global.py": ("static_rule", r"__main__|_perf_ns|sys\.modules"),
    "qr_disable_dispatch.py": ("static_rule", r"dispatch"),
    "judge_file_deletion.py": ("static_rule", r"cockpit|wire|sys\.modules"),
    # native code that runs Python from a text held as numbers (issue 31): its C++ is scanned
    "native_pyrun_forge.py": ("native_code", r"cpp_sources line \d+: uses PyRun_SimpleString"),
    "reply_forge.py": ("static_rule", r"multiprocessing|send_bytes|monkeypatch"),
}
STATIC_GAPS: dict[str, str] = {}  # every exploit above is caught statically now


def _forbidden(name: str) -> list[str]:
    return task_or_skip(task_for(name)).forbidden


def _params(names) -> list:
    out = []
    for name in sorted(names):
        marks = [pytest.mark.xfail(strict=True, reason=STATIC_GAPS[name])] if name in STATIC_GAPS else []
        out.append(pytest.param(name, id=name.removesuffix(".py"), marks=marks))
    return out


@pytest.mark.parametrize("name", _params(STATIC_CATCHES))
def test_static_scan_catches_the_exploit_before_import(name):
    kind, pattern = STATIC_CATCHES[name]
    findings = scan((ADVERSARIAL / name).read_text(), _forbidden(name))
    hits = [f for f in findings if f.kind == kind and re.search(pattern, f.message)]
    assert hits, f"{name}: no {kind} finding matching {pattern!r}; got {[(f.kind, f.message) for f in findings]}"
    assert all(f.line > 0 for f in findings), "findings must name a line"


STATIC_FALSE_REJECTS: dict[str, str] = {}
# test instruments, not candidates: they use introspection on purpose and run with static=False
PROBES = {"softmax_compile_probe.py"}


def _unusual() -> list:
    out = []
    for p in sorted(UNUSUAL.glob("*.py")):
        if p.name in PROBES:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=STATIC_FALSE_REJECTS[p.name])] if p.name in STATIC_FALSE_REJECTS else []
        out.append(pytest.param(p, id=p.stem, marks=marks))
    return out


@pytest.mark.parametrize("path", _unusual())
def test_unusual_correct_candidate_has_no_static_findings(path):
    findings = scan(path.read_text(), _forbidden(path.name))
    assert findings == []


def _seeds() -> list:
    out = []
    for task_dir in list_tasks(KERNELS):
        for seed in sorted((task_dir / "seeds").glob("*.py")):
            out.append(pytest.param(task_dir, seed, id=f"{task_dir.name}-{seed.stem}"))
    return out


@pytest.mark.parametrize(("task_dir", "seed"), _seeds())
def test_shipped_seed_has_no_static_findings_unless_it_is_a_baseline(task_dir: Path, seed: Path):
    task = load_task(task_dir)
    findings = scan(seed.read_text(), task.forbidden)
    if seed.name in task.baseline_seeds:
        return  # baselines may call the forbidden routine; the judge exempts them by content hash
    assert findings == [], [(f.kind, f.line, f.message) for f in findings]


def test_qr_baseline_seed_would_be_caught_if_it_were_not_exempt():
    task = task_or_skip("qr")
    for name in task.baseline_seeds:
        findings = scan((task.seeds_dir / name).read_text(), task.forbidden)
        assert any(f.kind == "forbidden_call" for f in findings), name


def test_syntax_error_is_one_finding_with_its_line():
    findings = scan("def kernel(x):\n    return (x\n", [])
    assert len(findings) == 1 and findings[0].kind == "syntax" and "line" in findings[0].message


def test_forbidden_names_are_caught_in_attributes_imports_and_strings():
    forbidden = task_or_skip("qr").forbidden
    cases = {
        "import torch\ndef kernel(A):\n    return torch.geqrf(A)\n": "torch.geqrf",
        "import torch\ndef kernel(A):\n    return torch.linalg.qr(A)\n": "torch.linalg.qr",
        "import numpy as np\ndef kernel(A):\n    return np.linalg.qr(A.numpy())\n": "numpy.linalg.qr",
        "from torch.linalg import householder_product\n": "householder_product",
        "import torch\nf = getattr(torch, 'geqrf')\n": "geqrf",
        "import torch\nf = torch.ops.aten.geqrf\n": "geqrf",
    }
    for src, what in cases.items():
        findings = [f for f in scan(src, forbidden) if f.kind == "forbidden_call"]
        assert findings, f"not caught: {what}"


def test_correct_code_that_merely_mentions_sqrt_or_a_qr_variable_is_not_flagged():
    forbidden = task_or_skip("qr").forbidden
    src = (
        "import torch\n"
        "def kernel(A):\n"
        "    qr_panel = A.clone()\n"
        "    norms = torch.sqrt((A * A).sum(1))\n"
        "    return qr_panel, norms\n"
    )
    assert scan(src, forbidden) == []


def test_a_docstring_that_mentions_the_library_routine_is_not_a_call():
    forbidden = task_or_skip("qr").forbidden
    src = (
        '"""Householder QR; (H, tau) in the same layout as LAPACK geqrf."""\n'
        "import torch\n"
        "def kernel(A):\n"
        "    return A, A[:, 0]\n"
    )
    assert scan(src, forbidden) == []


def test_torch_compile_imported_by_name_is_not_the_builtin_compile():
    src = "from torch import compile\n\ndef _f(x):\n    return x\n\nkernel = compile(_f)\n"
    assert scan(src, []) == []


def test_file_reads_through_pathlib_io_and_os_are_flagged():
    for src in (
        "from pathlib import Path\ndef kernel(x):\n    Path('/etc/hostname').read_text()\n    return x\n",
        "import io\ndef kernel(x):\n    io.open('/etc/hostname').read()\n    return x\n",
        "import os\ndef kernel(x):\n    os.open('/etc/hostname', os.O_RDONLY)\n    return x\n",
    ):
        assert scan(src, []), src


def test_side_streams_through_torch_cuda_stream_pass_the_scan_but_streams_it_cannot_see_do_not():
    """torch.cuda.Stream / torch.cuda.stream are allowed (the arena makes the timed stream wait
    for every stream made that way after each call), but a raw handle, the generic torch.Stream,
    switching torch's current stream by hand, or reaching the tracked class's base to make an
    untracked stream are still refused."""
    forked = (
        "import torch\n"
        "_side = torch.cuda.Stream(priority=-1)\n"
        "def kernel(x):\n"
        "    _side.wait_stream(torch.cuda.current_stream())\n"
        "    with torch.cuda.stream(_side):\n"
        "        y = x * 2\n"
        "    torch.cuda.current_stream().wait_stream(_side)\n"
        "    return y\n"
    )
    assert scan(forked, []) == []
    for src, what in (
        ("import torch\ns = torch.cuda.ExternalStream(1234)\ndef kernel(x):\n    return x\n",
         "side stream"),
        ("import torch\ndef kernel(x):\n    torch.cuda.set_stream(None)\n    return x\n",
         "side stream"),
        ("import torch\ns = torch.Stream(device='cuda')\ndef kernel(x):\n    return x\n",
         "does not see"),
        ("import torch\nS = torch.cuda.Stream.__mro__[1]\ndef kernel(x):\n    return x\n",
         "class hierarchy"),
        ("import torch\nS = torch.cuda.Stream.__bases__[0]\ndef kernel(x):\n    return x\n",
         "class hierarchy"),
    ):  # fmt: skip
        findings = scan(src, [])
        assert findings and all(f.kind == "static_rule" for f in findings), src
        assert any(what in f.message for f in findings), [f.message for f in findings]


def test_super_with_arguments_or_renamed_is_refused_but_plain_super_is_not():
    """super(T, obj) reaches past T's own methods (past the arena's torch.cuda.Stream.__new__,
    which records the streams a candidate makes); plain super() in a method is ordinary Python."""
    plain = (
        "import torch\n"
        "class Scale(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "def kernel(x):\n"
        "    return x * 2\n"
    )
    assert scan(plain, []) == []
    for src in (
        "import torch\ns = super(torch.cuda.Stream, torch.cuda.Stream).__new__(torch.cuda.Stream)\n"
        "def kernel(x):\n    return x\n",
        "import torch\nsup = super\ndef kernel(x):\n    return x\n",
    ):
        findings = scan(src, [])
        assert any("super" in f.message and f.kind == "static_rule" for f in findings), src
