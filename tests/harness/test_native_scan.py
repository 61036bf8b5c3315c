"""Native code states what it uses (`native_scan`, through `static_scan.scan`): a load_inline
candidate's C++/CUDA sources are resolved from the Python syntax tree and scanned before
anything is imported; every other route to native code is refused; honest native candidates and
every shipped seed pass unchanged.

No processes and no compiler: each test parses one source.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from judge_helpers import ADVERSARIAL, KERNELS, UNUSUAL, task_or_skip

from cockpit.harness.native_scan import check_flags, scan_native
from cockpit.harness.result import KINDS
from cockpit.harness.static_scan import scan
from cockpit.harness.task import list_tasks, load_task

HEAD = "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
KERNEL = "\ndef kernel(x):\n    return _ext.f(x)\n"
OK_BODY = "torch::Tensor f(torch::Tensor x) { return x.clone(); }"


def candidate(cpp: str, **extra: str) -> str:
    """A load_inline candidate whose C++ source is `cpp` (inserted as a raw string constant)."""
    kwargs = "".join(f", {k}={v}" for k, v in extra.items())
    return (
        HEAD
        + f'_SRC = r"""\n#include <torch/extension.h>\n{cpp}\n{OK_BODY}\n"""\n'
        + f'_ext = load_inline("probe", cpp_sources=_SRC, functions=["f"]{kwargs})\n'
        + KERNEL
    )


def native(findings) -> list[str]:
    return [f.message for f in findings if f.kind == "native_code"]


def assert_caught(src: str, pattern: str) -> None:
    findings = scan(src, [])
    msgs = native(findings)
    assert any(re.search(pattern, m) for m in msgs), (
        pattern,
        [(f.kind, f.message) for f in findings],
    )
    assert all(f.line > 0 for f in findings), "findings must name a line"


def test_native_code_is_a_rejection_kind():
    assert KINDS["native_code"] == "rejected"


def test_an_honest_candidate_built_the_same_way_passes():
    assert scan(candidate(""), []) == []


# --- one positive case per rule ----------------------------------------------------------------

RULES: dict[str, tuple[str, str]] = {
    "python_h": ("#include <Python.h>", r"includes <Python\.h>"),
    "python_h_quoted": ('#include "Python.h"', r"includes <Python\.h>"),
    "torch_python_h": ("#include <torch/python.h>", r"Python header|interpreter"),
    "pybind_embed": ("#include <pybind11/embed.h>", r"pybind11"),
    "pyrun": ('void g() { PyRun_SimpleString("import os"); }', r"PyRun_SimpleString"),
    "pyimport": ('void g() { PyImport_ImportModule("os"); }', r"PyImport_ImportModule"),
    "pyobject_call": ("void g(PyObject* o) { PyObject_CallObject(o, nullptr); }", r"PyObject"),
    "pyeval": ("void g() { PyEval_GetGlobals(); }", r"PyEval_GetGlobals"),
    "py_buildvalue": ('void g() { Py_BuildValue("i", 1); }', r"Py_BuildValue"),
    "private_api": ("void g() { _PyObject_New(nullptr); }", r"_PyObject_New"),
    "gilstate": (
        "void g() { auto s = PyGILState_Ensure(); PyGILState_Release(s); }",
        r"PyGILState",
    ),
    "thp": ("void g(at::Tensor t) { THPVariable_Wrap(t); }", r"THPVariable_Wrap"),
    "safe_pyobject": ("void g(c10::SafePyObject* o) {}", r"SafePyObject"),
    "py_eval": ('void g() { py::eval("1"); }', r"py::eval"),
    "py_exec": ('void g() { py::exec("import os"); }', r"py::exec"),
    "pybind11_eval_file": ('void g() { pybind11::eval_file("x.py"); }', r"pybind11::eval_file"),
    "module_import": ('void g() { py::module_::import("os"); }', r"py::module_::import"),
    "module_import_old": ('void g() { py::module::import("os"); }', r"py::module::import"),
    "py_globals": ("void g() { auto d = py::globals(); }", r"py::globals"),
    "py_builtins": ('void g() { py::module_::import("builtins"); }', r"import"),
    "attr": ('void g(py::module_ m) { m.attr("x"); }', r"\.attr\(\)"),
    "py_object": ("void g(py::object o) {}", r"py::object"),
    "using_namespace": ("using namespace pybind11;", r"renames pybind11"),
    "namespace_alias": ("namespace q = pybind11;", r"renames pybind11"),
    "dlopen": ('#include <dlfcn.h>\nvoid g() { dlopen("libc.so.6", 2); }', r"dlfcn|dlopen"),
    "dlsym": ('void g(void* h) { dlsym(h, "x"); }', r"dlsym"),
    "dlmopen": ('void g() { dlmopen(0, "x", 2); }', r"dlmopen"),
    "syscall_fn": ("void g() { syscall(39); }", r"syscall"),
    "syscall_header": ("#include <sys/syscall.h>", r"system-call header"),
    "syscall_asm": ('void g() { asm volatile("syscall"); }', r"system call"),
    "syscall_asm_split": ('void g() { __asm__ __volatile__("sys" "call"); }', r"system call"),
    "asm_macro": ('#define A asm\nvoid g() { A("syscall"); }', r"macro around inline assembly"),
    "machine_code_asm": ('void g() { __asm__(".byte 0x0f, 0x05"); }', r"machine code"),
    "proc": ('void g() { const char* p = "/proc/self/maps"; }', r"/proc"),
    "proc_split": ('void g() { const char* p = "/pr" /* */ "oc/self/mem"; }', r"/proc"),
    "proc_escaped": ('void g() { const char* p = "\\x2fproc/self/mem"; }', r"/proc"),
    "fork": ("void g() { fork(); }", r"fork"),
    "execve": ("void g() { execve(nullptr, nullptr, nullptr); }", r"execve"),
    "system": ('void g() { system("ls"); }', r"system\(\)"),
    "std_system": ('void g() { std::system("ls"); }', r"system\(\)"),
    "popen": ('void g() { popen("ls", "r"); }', r"popen"),
    "ptrace": ("void g() { ptrace(0, 0, 0, 0); }", r"ptrace"),
    "mprotect": ("void g(void* p) { mprotect(p, 4096, 7); }", r"mprotect"),
    "process_vm": ("void g() { process_vm_readv(0, 0, 0, 0, 0, 0); }", r"process_vm_readv"),
    "ld_preload": ('void g() { setenv("LD_PRELOAD", "x.so", 1); }', r"setenv|LD_PRELOAD"),
    "getenv": ('void g() { getenv("HOME"); }', r"getenv"),
    "fopen": ('void g() { fopen("x", "r"); }', r"fopen"),
    "open": ('void g() { open("x", 0); }', r"open\(\)"),
    "exit": ("void g() { std::exit(0); }", r"ends the process"),
    "ifstream": ('void g() { std::ifstream f("x"); }', r"ifstream"),
    "thread": ("void g() { std::thread t([]{}); t.detach(); }", r"thread"),
    "pthread": (
        "void g() { pthread_create(nullptr, nullptr, nullptr, nullptr); }",
        r"pthread_create",
    ),
    "side_stream": ("void g() { cudaStream_t s; cudaStreamCreate(&s); }", r"cudaStreamCreate"),
    "l2_pin": ("void g() { cudaStreamAttrValue v; v.accessPolicyWindow.num_bytes = 1; }", r"L2"),
    "token_paste": (
        '#define CAT(a, b) a##b\nvoid g() { CAT(PyRun_, SimpleString)("1"); }',
        r"pastes tokens",
    ),
    "line_splice": ('void g() { PyRun_Simple\\\nString("1"); }', r"PyRun_SimpleString"),
    "ucn": ('void g() { \\u0050yRun_SimpleString("1"); }', r"universal character"),
    "digraph": ("%:include <Python.h>", r"digraph"),
    "macro_include": ("#define H <Python.h>\n#include H", r"macro"),
    "absolute_include": ('#include "/etc/hostname"', r"outside the candidate"),
    "dispatcher": ("void g() { c10::Dispatcher::singleton(); }", r"dispatcher"),
    "dispatch_guard": (
        "void g() { c10::impl::ExcludeDispatchKeyGuard gd(c10::DispatchKey::CPU); }",
        r"dispatcher",
    ),
    "library_impl_aten": ("TORCH_LIBRARY_IMPL(aten, CPU, m) { }", r"TORCH_LIBRARY_IMPL\(aten"),
    "library_fragment": ("TORCH_LIBRARY_FRAGMENT(aten, m) { }", r"TORCH_LIBRARY_FRAGMENT\(aten"),
    "asm_label": (
        'extern "C" int run(const char*) __asm__("PyRun_SimpleString");',
        r"Python C API",
    ),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_native_rule_rejects_its_construct(rule):
    cpp, pattern = RULES[rule]
    assert_caught(candidate(cpp), pattern)


def test_the_finding_names_the_candidate_line_and_the_native_line():
    src = candidate('void g() { PyRun_SimpleString("1"); }')
    findings = [f for f in scan(src, []) if "PyRun_SimpleString" in f.message]
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if "void g()" in ln)
    assert findings and findings[0].line == line, (line, findings)
    assert re.match(r"cpp_sources line 3: uses PyRun_SimpleString", findings[0].message)


def test_a_source_not_written_as_literals_is_reported_at_its_argument():
    src = (
        HEAD
        + '_A = "void g() { PyRun_"\n_B = "SimpleString(\\"1\\"); }"\n'
        + '_ext = load_inline("p",\n    cpp_sources=_A + _B, functions=["g"])\n'
        + KERNEL
    )
    findings = [f for f in scan(src, []) if "PyRun_SimpleString" in f.message]
    assert findings and findings[0].line == 6, findings


def test_cuda_sources_and_sycl_sources_are_scanned_like_cpp_sources():
    for param in ("cuda_sources", "sycl_sources"):
        src = (
            HEAD + f'_ext = load_inline("p", cpp_sources="torch::Tensor f(torch::Tensor x);", '
            f'{param}="void g() {{ PyRun_SimpleString(\\"1\\"); }}", functions=["f"])\n' + KERNEL
        )
        assert_caught(src, rf"{param} line 1: uses PyRun_SimpleString")


def test_comments_and_prose_strings_do_not_trigger_rules():
    src = candidate(
        "// no Python.h here, no dlopen, no /proc: PyRun_SimpleString is only a word\n"
        "/* fork() system() PyObject */\n"
        'void g() { TORCH_CHECK(true, "works like PyTorch softmax"); }'
    )
    assert scan(src, []) == []


def test_member_and_namespaced_names_are_not_the_libc_functions():
    src = candidate(
        "torch::Tensor h(torch::Tensor x) { auto y = x.clone(); return at::clone(y); }\n"
        "struct S { int system; };\nint k(S s, std::vector<int> v) { return s.system + v.size(); }"
    )
    assert scan(src, []) == []


def test_ptx_inline_assembly_is_allowed_but_a_syscall_in_it_is_not():
    ptx = (
        "__device__ float ld(const float* p) { float v;\n"
        '  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v; }'
    )
    assert scan_native(ptx) == []
    assert scan_native('void g() { asm("mov $60, %eax\\n\\tsyscall"); }')
    # outside assembly the same words are prose
    assert scan_native('void g() { TORCH_CHECK(false, "call .long() before the syscall"); }') == []


# --- source arguments the scan must resolve ---------------------------------------------------

RESOLVED_FORMS = {
    "literal": 'cpp_sources="{X}"',
    "list": 'cpp_sources=["#include <cmath>", "{X}"]',
    "concat": 'cpp_sources="void g() { Py" + "Run_SimpleString(\\"1\\"); }"',
    "fstring": 'cpp_sources=f"{_A}{_B}"',
    "join": 'cpp_sources="".join([_A, _B])',
    "format": 'cpp_sources="{}{}".format(_A, _B)',
    "percent": 'cpp_sources="%s%s" % (_A, _B)',
    "positional": '"{X}"',
}
EVIL = 'void g() { PyRun_SimpleString(\\"1\\"); }'


@pytest.mark.parametrize("form", sorted(RESOLVED_FORMS))
def test_sources_built_from_constants_are_resolved_and_scanned(form):
    arg = RESOLVED_FORMS[form].replace("{X}", EVIL)
    src = (
        HEAD
        + '_A = "void g() { PyRun_"\n_B = "SimpleString(\\"1\\"); }"\n'
        + f'_ext = load_inline("p", {arg}, functions=["g"])\n'
        + KERNEL
    )
    assert_caught(src, r"PyRun_SimpleString")


def test_a_source_split_over_list_items_is_joined_as_torch_joins_it():
    # torch joins the items with newlines; a trailing backslash splices them back together
    src = (
        HEAD + '_ext = load_inline("p", cpp_sources=["void g() { PyRun_Simple\\\\", '
        '"String(\\"1\\"); }"], functions=["g"])\n' + KERNEL
    )
    assert_caught(src, r"PyRun_SimpleString")


UNRESOLVABLE = {
    "numbers": "cpp_sources=bytes([118, 111, 105, 100]).decode()",
    "chr_join": 'cpp_sources="".join(chr(c) for c in [118, 111])',
    "call": "cpp_sources=make_source()",
    "rebound": "cpp_sources=_S2",
    "parameter": "cpp_sources=_SRC_P",
    "subscript": "cpp_sources=_PARTS[0]",
    "star_args": "*_ARGS",
    "double_star": "**_KW",
}
DEFS = (
    "def make_source():\n    return 'void g() {}'\n"
    "_S2 = 'void g() {}'\n_S2 = _S2 + ''\n"
    "def build(_SRC_P='void g() {}'):\n    return _SRC_P\n"
    "_ARGS = ['p', 'void g() {}']\n_KW = {'name': 'p', 'cpp_sources': 'void g() {}'}\n"
    "_PARTS = ['void g() {}']\n"
)


@pytest.mark.parametrize("form", sorted(UNRESOLVABLE))
def test_sources_the_scan_cannot_resolve_are_rejected(form):
    name = "" if form == "star_args" else '"p", '
    src = HEAD + DEFS + f"_ext = load_inline({name}{UNRESOLVABLE[form]})\n" + KERNEL
    assert_caught(src, r"not a string constant the judge can read|with \*")


def test_no_name_is_read_as_a_constant_after_a_star_import():
    src = (
        HEAD
        + "from math import *\n"
        + '_SRC = "torch::Tensor f(torch::Tensor x) { return x; }"\n'
        + '_ext = load_inline("p", cpp_sources=_SRC, functions=["f"])\n'
        + KERNEL
    )
    assert_caught(src, r"not a string constant the judge can read")


def test_a_source_list_changed_after_it_is_bound_is_rejected():
    src = (
        HEAD
        + '_SRCS = ["void g() {}"]\n_SRCS.append(bytes([118]).decode())\n'
        + '_ext = load_inline("p", cpp_sources=_SRCS, functions=["g"])\n'
        + KERNEL
    )
    assert_caught(src, r"_SRCS, a list of native sources")


def test_function_names_and_docstrings_cannot_inject_code_into_the_bindings():
    for functions in ('["g); PyRun_SimpleString(\\"1\\"); (void(0"]', '{"g": "x\\"); foo(\\""}'):
        src = (
            HEAD + f'_ext = load_inline("p", cpp_sources="void g() {{}}", functions={functions})\n'
        )
        assert_caught(src + KERNEL, r"not a plain name")
    assert_caught(
        HEAD
        + '_ext = load_inline("p", cpp_sources="", functions=["PyRun_SimpleString"])\n'
        + KERNEL,
        r"PyRun_SimpleString",
    )


def test_compiler_flags_are_limited_to_what_a_kernel_build_needs():
    ok_host = [
        "-O3",
        "-std=c++17",
        "-march=native",
        "-ffast-math",
        "-DNDEBUG",
        "-DBLOCK=256",
        "-Wall",
    ]
    ok_cuda = ["-O3", "--use_fast_math", "-lineinfo", "-gencode=arch=compute_90a,code=sm_90a",
               "-Xptxas=-v", "--expt-relaxed-constexpr", "-Xcompiler", "-fopenmp",
               "--maxrregcount=64"]  # fmt: skip
    assert check_flags("extra_cflags", ok_host, []) == []
    assert check_flags("extra_cuda_cflags", ok_cuda, []) == []
    assert check_flags("extra_ldflags", ["-lcublas"], []) == []
    for param, flag in (
        ("extra_cflags", "-include Python.h"),
        ("extra_cflags", "-includePython.h"),
        ("extra_cflags", "-DRUN=PyRun_SimpleString"),
        ("extra_cflags", "-Wl,--wrap=send"),
        ("extra_cflags", "-fplugin=/tmp/x.so"),
        ("extra_cuda_cflags", "--default-stream=per-thread"),
        ("extra_cuda_cflags", "-Xcompiler=-include,Python.h"),
        ("extra_ldflags", "-ldl"),
        ("extra_ldflags", "-L/tmp"),
        ("extra_ldflags", "/tmp/evil.so"),
    ):
        assert check_flags(param, [flag], []), (param, flag)
    assert_caught(
        candidate("", extra_cflags='["-include", "Python.h"]'), r"not one the judge knows"
    )
    assert_caught(candidate("", extra_include_paths='["/tmp"]'), r"extra_include_paths")
    assert_caught(candidate("", build_directory='"/tmp/b"'), r"build_directory")
    assert_caught(candidate("", extra_cflags="_FLAGS()"), r"not a string constant")


def test_getattr_by_computed_name_on_an_object_of_the_candidate_is_not_a_module_access():
    src = (
        "import torch\n"
        "class Lanes:\n"
        "    def __init__(self):\n        self.a = 1\n"
        "    def get(self, lane):\n        return getattr(self, lane)\n"
        "_dt = getattr(torch, 'float32')\n"
        "def kernel(x):\n    return x\n"
    )
    assert scan(src, []) == []


def test_the_task_forbidden_names_apply_inside_native_code():
    forbidden = task_or_skip("qr").forbidden
    for body in (
        "void g(float* a) { cusolverDnSgeqrf(0, 0, 0, a, 0, 0, 0, 0, 0); }",
        "void g(at::Tensor a) { at::geqrf(a); }",
        'void g() { auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::geq" "rf", ""); }',
        'void g() { auto s = "aten::" "geqrf"; }',
    ):
        findings = scan(candidate(body), forbidden)
        assert any("forbidden" in f.message and f.kind == "native_code" for f in findings), body


def test_AT_DISPATCH_and_an_operator_library_of_its_own_are_allowed():
    src = candidate(
        "torch::Tensor h(torch::Tensor x) {\n"
        '  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "h", ([&] { }));\n'
        "  return x; }\n"
        'TORCH_LIBRARY(mysoftmax, m) { m.def("h(Tensor x) -> Tensor"); }\n'
        'TORCH_LIBRARY_IMPL(mysoftmax, CPU, m) { m.impl("h", &h); }'
    )
    assert scan(src, []) == []


# --- other routes to native code -----------------------------------------------------------------

OTHER_ROUTES = {
    "cpp_extension.load": (
        "import torch.utils.cpp_extension as ce\n_m = ce.load('m', sources=['m.cpp'])\n",
        r"cpp_extension module other than to call load_inline",
    ),
    "from_import_load": ("from torch.utils.cpp_extension import load\n", r"imports load from"),
    "load_inline_aliased_value": (
        "from torch.utils.cpp_extension import load_inline\n_f = load_inline\n",
        r"other than by calling it",
    ),
    "load_inline_getattr": (
        "import torch\n_f = getattr(torch.utils, 'cpp_extension')\n",
        r"names a native-code loader|module itself",
    ),
    "computed_getattr": (
        "import torch\n_n = 'cpp_' + 'extension'\n_m = getattr(torch.utils, _n)\n",
        r"by computed name",
    ),
    "computed_getattribute": (
        "import torch\n_m = torch.utils.__getattribute__('cpp_' + 'extension')\n",
        r"by computed name",
    ),
    "jit_compile": (
        "import torch.utils.cpp_extension as ce\nce._jit_compile('m', [], None, None, None, None)\n",
        r"_jit_compile",
    ),
    "ops_load_library": ("import torch\ntorch.ops.load_library('/tmp/x.so')\n", r"load_library"),
    "classes_load_library": (
        "import torch\ntorch.classes.load_library('/tmp/x.so')\n",
        r"load_library",
    ),
    "pluggable_allocator": (
        "import torch\ntorch.cuda.memory.CUDAPluggableAllocator('/tmp/a.so', 'a', 'f')\n",
        r"CUDAPluggableAllocator",
    ),
    "triton_build": (
        "from triton.runtime.build import compile_module_from_src\n",
        r"triton\.runtime\.build|compile_module_from_src",
    ),
    "inductor_codecache": (
        "from torch._inductor.codecache import CppCodeCache\n",
        r"torch\._inductor\.codecache",
    ),
    "inductor_pycodecache": (
        "import torch._inductor.codecache as cc\ncc.PyCodeCache.load('x = 1')\n",
        r"PyCodeCache",
    ),
    "cupy": ("import cupy\n", r"imports cupy"),
    "cupy_raw_kernel": ("from cupy import RawKernel\n", r"imports cupy"),
    "numba_cfunc": ("from numba import cfunc\n", r"imports numba"),
    "cppimport": ("import cppimport\n", r"imports cppimport"),
    "cffi": ("import cffi\n", r"imports cffi"),
    "pycuda": ("from pycuda.compiler import SourceModule\n", r"imports pycuda"),
}


@pytest.mark.parametrize("route", sorted(OTHER_ROUTES))
def test_other_routes_to_native_code_are_refused(route):
    src, pattern = OTHER_ROUTES[route]
    findings = scan(src + KERNEL.replace("_ext.f(x)", "x"), [])
    assert any(re.search(pattern, f.message) for f in findings), [
        (f.kind, f.message) for f in findings
    ]
    assert all(f.kind in ("native_code", "static_rule") for f in findings)


# --- the shipped candidates and the forge --------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax_cpp_inline.py", "softmax_cuda_inline.py"])
def test_the_shipped_native_candidates_pass_the_scan_unchanged(name):
    assert scan((UNUSUAL / name).read_text(), task_or_skip("softmax").forbidden) == []


def _seeds() -> list:
    return [
        pytest.param(task_dir, seed, id=f"{task_dir.name}-{seed.stem}")
        for task_dir in list_tasks(KERNELS)
        for seed in sorted((task_dir / "seeds").glob("*.py"))
    ]


@pytest.mark.parametrize(("task_dir", "seed"), _seeds())
def test_no_shipped_seed_has_a_native_finding(task_dir: Path, seed: Path):
    assert native(scan(seed.read_text(), load_task(task_dir).forbidden)) == []


def test_the_pyrun_forge_is_rejected_before_import_with_the_line_it_breaks():
    src = (ADVERSARIAL / "native_pyrun_forge.py").read_text()
    findings = scan(src, task_or_skip("softmax").forbidden)
    assert findings and all(f.kind == "native_code" for f in findings)
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if "PyRun_SimpleString(" in ln)
    assert any(
        f.line == line and re.search(r"cpp_sources line \d+: uses PyRun_SimpleString", f.message)
        for f in findings
    ), [(f.line, f.message) for f in findings]
