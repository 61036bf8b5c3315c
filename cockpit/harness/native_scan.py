"""Native code states what it uses: the static rules for C++/CUDA a candidate builds.

A candidate may build C++ or CUDA with `torch.utils.cpp_extension.load_inline`. That code runs in
the arena's own process, where it could reach everything the Python rules of `static_scan` keep
a candidate away from (the interpreter, the reply channel, the timers). So the native source is
scanned too, before anything is imported:

- `scan_load_inline` finds every `load_inline` call in the candidate's syntax tree and resolves
  its source arguments to the text the compiler will see (string constants, names bound once to
  them, lists, `+`, f-strings, `str.join`, `str.format`, `%`). An argument it cannot resolve is
  rejected: native sources must be string constants the judge can read.
- `scan_native` applies the rules to that text: no Python C API, no pybind11 route into the
  interpreter (eval, exec, import, attribute lookup), no dynamic loading, raw system calls,
  processes, files, `/proc`, environment or memory protection, no side streams or L2 pinning
  (the Python rules' native twins), and nothing that builds a name the scan cannot read (token
  pasting, universal character names, digraphs, macro includes).
- Every other route to native code (`cpp_extension.load` and its internals, `load_library`,
  Triton's and Inductor's C compilers, cupy, numba, cppimport, cffi...) is refused outright:
  the allowed backends are torch, Triton kernels and `load_inline`.

This is clear feedback, not a proof: native code can reach any address in its process, and a
determined forge (pointer arithmetic from a known symbol) is invisible to any scan. The defence
against such a forge is dynamic: the judge's own clock (see docs/decisions/0002).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

KIND = "native_code"

# --- Python-level routes to native code -----------------------------------------------------

# Root modules that build or load native code outside the allowed backends.
NATIVE_IMPORTS = {
    "cupy": "compiles and loads CUDA code outside the allowed backends (use load_inline)",
    "cupyx": "compiles and loads CUDA code outside the allowed backends (use load_inline)",
    "numba": "compiles native code outside the allowed backends (use Triton or load_inline)",
    "cppimport": "builds native code from files (use load_inline with string sources)",
    "pybind11": "builds native code outside load_inline",
    "setuptools": "builds native code outside load_inline",
    "distutils": "builds native code outside load_inline",
    "Cython": "builds native code outside load_inline",
    "pyximport": "builds native code outside load_inline",
    "pycuda": "compiles and loads CUDA code outside the allowed backends (use load_inline)",
    "cuda": "calls the CUDA driver outside the allowed backends (cuda-python)",
    "llvmlite": "compiles native code outside the allowed backends",
}
# Dotted module prefixes that compile C/C++ from a string or load a shared library.
NATIVE_CHAINS = {
    "torch._inductor.codecache": "compiles and loads C++ or Python from strings (Inductor's caches)",
    "torch._inductor.cpp_builder": "compiles C++ outside load_inline (Inductor's builder)",
    "torch._inductor.async_compile": "compiles C++ outside load_inline (Inductor's compiler pool)",
    "triton.runtime.build": "compiles C and loads it as a Python module (Triton's launcher build)",
}
# Attribute names that do the same whatever they hang off.
NATIVE_ATTRS = {
    "load_library": "loads a shared library the judge cannot read",
    "compile_module_from_src": "compiles C and loads it as a Python module",
    "CUDAPluggableAllocator": "loads a shared library as torch's allocator",
    "change_current_allocator": "replaces torch's allocator",
    "_jit_compile": "builds native code past load_inline's arguments",
    "_import_module_from_library": "loads a shared library the judge cannot read",
    "CppCodeCache": "compiles and loads C++ from a string outside load_inline",
    "CppPythonBindingsCodeCache": "compiles and loads C++ from a string outside load_inline",
    "CppWrapperCodeCache": "compiles and loads C++ from a string outside load_inline",
    "CUDACodeCache": "compiles and loads CUDA from a string outside load_inline",
    "PyCodeCache": "runs Python built from a string",
}
CPP_EXTENSION = "torch.utils.cpp_extension"
# identifier-like strings naming these are a loader reached by computed name (getattr)
_LOADER_WORDS = {"cpp_extension", "load_inline", *NATIVE_ATTRS, "codecache", "cpp_builder"}

# load_inline's parameters in order (torch 2.x); a positional argument past these is unreadable
_LOAD_INLINE_PARAMS = (
    "name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags",
    "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags", "extra_include_paths",
    "build_directory", "verbose", "with_cuda", "with_sycl", "is_python_module",
    "with_pytorch_error_handling", "keep_intermediates", "use_pch", "no_implicit_headers",
)  # fmt: skip
_SOURCES = ("cpp_sources", "cuda_sources", "sycl_sources")
_FLAGS = ("extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags")
_BOOLS = {
    "verbose", "with_cuda", "with_sycl", "is_python_module", "with_pytorch_error_handling",
    "keep_intermediates", "use_pch", "no_implicit_headers",
}  # fmt: skip

# --- rules on the native text -----------------------------------------------------------------

_PY_API = "calls the Python C API: native code may not reach the interpreter"
_PYBIND = "reaches the interpreter through pybind11 (only bindings are allowed: PYBIND11_MODULE, m.def, py::arg)"
_DL = "loads or looks up native code at run time"
_SYSCALL = "makes raw system calls"
_PROC = "starts, replaces or signals processes"
_MEM = "changes memory protection or reads another process's memory"
_FILES = "opens files: native code may only compute on the tensors it is given"
_ENV = "reads or changes the environment"
_THREADS = "starts threads the judge does not see"
_SIGNALS = "installs signal handlers"
_EXIT = "ends the process"
_STREAM = "runs work on a stream the harness does not see (use the current stream)"
_L2 = "pins data in L2 (persisting cache)"
_DISPATCH = "registers or switches dispatcher kernels outside its own operator namespace"
_LIBRARY_MACROS = {"TORCH_LIBRARY", "TORCH_LIBRARY_IMPL", "TORCH_LIBRARY_FRAGMENT"}
# operator namespaces that belong to torch: a candidate registers only in a namespace of its own
_RESERVED_NS = {"aten", "prim", "prims", "_", "c10", "quantized", "cuda", "torch", "inductor"}

# Headers that reach the interpreter, the dynamic loader or the kernel's system-call table.
_BANNED_HEADERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"python", re.I), "a Python header: " + _PY_API),
    (re.compile(r"^pybind11/(embed|eval)\.h$"), "pybind11's interpreter API: " + _PYBIND),
    (re.compile(r"^(dlfcn|link)\.h$"), "the dynamic loader's header: " + _DL),
    (re.compile(r"^(sys/syscall|syscall|asm/unistd\w*|sys/ptrace|spawn|sys/mman)\.h$"),
     "a system-call header: " + _SYSCALL),
]  # fmt: skip

# identifier -> reason; banned wherever the identifier appears in code (not only when called)
_BANNED_IDENTS: dict[str, str] = {
    **dict.fromkeys(
        ("dlopen", "dlsym", "dlvsym", "dlmopen", "dladdr", "dladdr1", "dlinfo",
         "dl_iterate_phdr", "_r_debug", "getauxval", "link_map", "_DYNAMIC"), _DL),
    **dict.fromkeys(("syscall", "__syscall", "_syscall"), _SYSCALL),
    **dict.fromkeys(
        ("fork", "vfork", "clone3", "execl", "execlp", "execle", "execv", "execvp", "execvpe",
         "execve", "execveat", "fexecve", "popen", "_popen", "wordexp", "posix_spawn",
         "posix_spawnp", "tgkill", "tkill", "pidfd_open", "pidfd_send_signal"), _PROC),
    **dict.fromkeys(
        ("ptrace", "process_vm_readv", "process_vm_writev", "mprotect", "pkey_mprotect",
         "mmap", "mmap64", "mremap", "munmap", "prctl", "seccomp", "personality"), _MEM),
    **dict.fromkeys(
        ("fopen", "fopen64", "freopen", "fdopen", "openat", "openat2", "open64", "creat",
         "opendir", "readlink", "ifstream", "ofstream", "fstream", "filebuf", "filesystem",
         "memfd_create"), _FILES),
    **dict.fromkeys(
        ("getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "clearenv", "environ",
         "__environ", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"), _ENV),
    **dict.fromkeys(("pthread_create", "thrd_create", "jthread"), _THREADS),
    **dict.fromkeys(("sigaction", "sigset"), _SIGNALS),
    **dict.fromkeys(
        ("cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
         "cuStreamCreate", "cuStreamCreateWithPriority", "getStreamFromPool",
         "getStreamFromExternal", "setCurrentCUDAStream", "cudaStreamPerThread",
         "CU_STREAM_PER_THREAD"), _STREAM),
    **dict.fromkeys(
        ("accessPolicyWindow", "cudaStreamSetAttribute", "cuStreamSetAttribute",
         "cudaLimitPersistingL2CacheSize", "cudaCtxResetPersistingL2Cache",
         "cudaStreamAttributeAccessPolicyWindow"), _L2),
}  # fmt: skip
# identifiers banned only when called as a free function (they are also common member names:
# tensor.clone(), file.open(), a local `system`)
_BANNED_CALLS: dict[str, str] = {
    "system": _PROC, "clone": _PROC, "kill": _PROC, "open": _FILES, "signal": _SIGNALS,
    "exit": _EXIT, "_exit": _EXIT, "_Exit": _EXIT, "quick_exit": _EXIT,
}  # fmt: skip
# pybind11 names a binding needs; any other py:: / pybind11:: name is a route into Python
_PYBIND_OK = {
    "arg", "arg_v", "call_guard", "gil_scoped_release", "return_value_policy", "reference",
    "reference_internal", "copy", "move", "take_ownership", "automatic",
    "automatic_reference", "overload_cast", "const_", "kw_only", "pos_only", "module_",
    "module", "doc", "name", "none",
}  # fmt: skip
# inside any string literal: assembly that makes a system call or emits raw machine code
_ASM_BAD = re.compile(
    r"\b(syscall|sysenter|svc)\b|\bint\s*\$?0x80\b|"
    r"\.(byte|2byte|4byte|8byte|word|long|quad|inst|incbin|section|ascii|asciz|string)\b"
)
_STRING_BAD: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"/proc\b"), "names /proc: reads the process's own state"),
    (re.compile(r"/dev/"), "names a device file: " + _FILES),
    (re.compile(r"LD_(PRELOAD|LIBRARY_PATH|AUDIT)"), _ENV),
    (re.compile(r"^_?Py[A-Z_]\w*$"), "names a Python C API symbol: " + _PY_API),
]
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_PY_IDENT = re.compile(r"(?:^|[_a-z0-9])Py[A-Z_]|^THP[A-Z]")
_PRE = re.compile(r"^[ \t]*(#|%:|\?\?=)[ \t]*(\w*)(.*)$", re.M)


def _splice(text: str) -> tuple[str, list[int], list[int]]:
    """Remove backslash-newlines (the compiler's first step, which can join an identifier split
    over two lines). Returns the text and a map from its offsets to original line numbers."""
    out: list[str] = []
    starts: list[int] = []  # offset in the spliced text where each physical line starts
    lines: list[int] = []
    pos = 0
    for n, line in enumerate(text.split("\n"), start=1):
        starts.append(pos)
        lines.append(n)
        body = line[:-1] if line.endswith("\r") else line
        if body.endswith("\\"):
            out.append(body[:-1])
            pos += len(body) - 1
        else:
            out.append(line + "\n")
            pos += len(line) + 1
    return "".join(out), starts, lines


_ESC = re.compile(r"\\(x[0-9A-Fa-f]+|[0-7]{1,3}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_SIMPLE_ESC = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        try:
            if e[0] == "x":
                return chr(int(e[1:], 16) % 0x110000)
            if e[0] in "uU" and len(e) > 1:
                return chr(int(e[1:], 16) % 0x110000)
            if e[0] in "01234567":
                return chr(int(e, 8))
        except ValueError:
            return e
        return _SIMPLE_ESC.get(e, e)

    return _ESC.sub(one, body)


_RAW = re.compile(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(')


def _lex(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Split spliced C/C++ text into code (comments blanked, each literal replaced by `""` and
    blanks of the same length, so offsets hold) and its string literals (offset, decoded text),
    with adjacent literals joined as the compiler joins them."""
    code: list[str] = []
    strings: list[tuple[int, str]] = []
    i, n = 0, len(text)
    last_string_end = -1  # offset just past the last string literal

    def blank(a: int, b: int) -> str:
        return "".join(ch if ch == "\n" else " " for ch in text[a:b])

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            code.append(" " * (j - i))
            i = j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            code.append(blank(i, j))
            i = j
            continue
        raw = _RAW.match(text, i) if c in "uULR" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', raw.end())
            end = n if end < 0 else end
            j = min(n, end + len(raw.group(1)) + 2)
            strings.append((i, text[raw.end() : end]))
            code.append('""' + blank(i + 2, j))
            i = last_string_end = j
            continue
        if c == "'" and i > 0 and text[i - 1].isdigit():
            code.append(" ")  # a digit separator (1'000'000), not a character literal
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            if c == '"':
                body = _unescape(text[i + 1 : j - 1])
                between = text[last_string_end:i] if last_string_end >= 0 else "x"
                between = re.sub(r"/\*.*?\*/|//[^\n]*", "", between, flags=re.S)
                if strings and not between.strip():
                    off, prev = strings[-1]
                    strings[-1] = (off, prev + body)
                else:
                    strings.append((i, body))
                code.append('""' + " " * (j - i - 2))
                last_string_end = j
            else:
                code.append("'" + " " * (j - i - 2) + "'" if j - i >= 2 else " " * (j - i))
            i = j
            continue
        code.append(c)
        i += 1
    return "".join(code), strings


def _member_or_qualified(code: str, start: int) -> str:
    """'member' after `.`/`->`, the namespace after `ns::`, '' for a free use."""
    before = code[:start].rstrip()
    if before.endswith(".") or before.endswith("->"):
        return "member"
    if before.endswith("::"):
        ns = re.search(r"(\w*)\s*::$", before)
        return ns.group(1) if ns and ns.group(1) else "::"
    return ""


def scan_native(text: str, forbidden: list[str] | None = None) -> list[tuple[int, str]]:
    """Every rule the native source `text` breaks, as (line in `text`, message); empty means
    it may be built. `forbidden` is the task's forbidden names, matched in identifiers."""
    from cockpit.harness.static_scan import _forbidden_match

    spliced, starts, lines = _splice(text)
    code, strings = _lex(spliced)
    out: list[tuple[int, str]] = []

    def line_of(offset: int) -> int:
        return lines[max(0, bisect.bisect_right(starts, offset) - 1)]

    def add(offset: int, message: str) -> None:
        out.append((line_of(offset), message))

    # preprocessor: includes, and the tricks that build names the scan cannot read
    for m in _PRE.finditer(code):
        mark, directive, rest = m.group(1), m.group(2), m.group(3)
        if mark != "#":
            add(m.start(), "writes a preprocessor directive with a digraph or trigraph")
            continue
        if directive in ("include_next", "import", "embed"):
            add(m.start(), f"uses #{directive}: reads a file the judge cannot see")
        if directive not in ("include", "include_next", "import"):
            continue
        target = re.match(r'\s*(<([^>]*)>|""\s*)', rest)
        name = ""
        if target and target.group(2) is not None:
            name = target.group(2).strip()
        elif target:  # a quoted include: its text is in the string table at this offset
            off = m.start(3) + rest.index('""')
            name = next((s for o, s in strings if o == off), "")
        else:
            add(m.start(), "includes a file named by a macro: the judge cannot read it")
            continue
        if name.startswith("/") or ".." in name.split("/"):
            add(m.start(), f"includes {name!r}: a file outside the candidate's text")
        for pat, why in _BANNED_HEADERS:
            if pat.search(name):
                add(m.start(), f"includes <{name}>: {why}")
                break
    for m in re.finditer(r"##|%:%:", code):
        add(m.start(), "pastes tokens (##): builds names the judge cannot read")
    for m in re.finditer(r"%:|\?\?[=/'()!<>-]", code):
        if not code.startswith("%:%:", m.start()):
            add(m.start(), "writes a digraph or trigraph: hides what the code names")
    for m in re.finditer(r"\\[uU]", code):
        add(m.start(), "writes an identifier with universal character names (\\u)")
    # identifiers
    for m in _IDENT_RE.finditer(code):
        word = m.group(0)
        if m.start() > 0 and (code[m.start() - 1].isalnum() or code[m.start() - 1] == "_"):
            continue
        if _PY_IDENT.search(word):
            add(m.start(), f"uses {word}: {_PY_API}")
        elif word in _BANNED_IDENTS:
            why = _BANNED_IDENTS[word]
            # CUDA's stream and L2 names are banned as members too (a field of an attribute
            # struct); the C library's only as free or std:: names
            if why in (_STREAM, _L2) or _member_or_qualified(code, m.start()) in ("", "std", "::"):
                add(m.start(), f"uses {word}: {why}")
        elif (
            word in ("thread", "jthread", "async")
            and _member_or_qualified(code, m.start()) == "std"
        ):
            add(m.start(), f"uses std::{word}: {_THREADS}")
        elif word in _BANNED_CALLS and re.match(r"\s*\(", code[m.end() :]):
            if _member_or_qualified(code, m.start()) in ("", "std", "::"):
                add(m.start(), f"calls {word}(): {_BANNED_CALLS[word]}")
        elif word in ("attr", "import") and re.match(r"\s*\(", code[m.end() :]):
            add(m.start(), f"calls .{word}(): {_PYBIND}")
        elif word == "python" and _member_or_qualified(code, m.start()):
            add(m.start(), f"uses {word}:: {_PY_API}")
        elif word in ("asm", "__asm__", "__asm"):
            pass  # the assembly text is checked with the strings
        elif "dispatch" in word.lower() and not word.isupper():
            # AT_DISPATCH_* (upper case) picks a dtype; Dispatcher, DispatchKey guards and
            # redispatch reach the dispatcher, where the forbidden-op watch lives
            add(m.start(), f"uses {word}: {_DISPATCH}")
        elif word.startswith("TORCH_LIBRARY") and word in _LIBRARY_MACROS:
            args = re.match(r"\s*\(\s*(\w+)", code[m.end() :])
            ns = args.group(1) if args else ""
            own = set(re.findall(r"\bTORCH_LIBRARY\s*\(\s*(\w+)", code)) - _RESERVED_NS
            if ns in _RESERVED_NS or (word != "TORCH_LIBRARY" and ns not in own):
                add(m.start(), f"uses {word}({ns}, ...): {_DISPATCH}")
        elif forbidden:
            hit = _forbidden_match(word, [f for f in forbidden if "." not in f])
            if hit:
                add(m.start(), f"uses {word} (forbidden: {hit})")
    for m in re.finditer(r"\b(?:py|pybind11)\s*::\s*(\w+(?:\s*::\s*\w+)*)", code):
        parts = [p.strip() for p in m.group(1).split("::")]
        bad = [p for p in parts if p not in _PYBIND_OK]
        if bad:
            add(m.start(), f"uses {m.group(0).replace(' ', '')}: {_PYBIND}")
    for m in re.finditer(
        r"\busing\s+(namespace\s+)?(py|pybind11)\b|\bnamespace\s+(\w+)\s*=\s*(::\s*)?(py|pybind11)\b",
        code,
    ):
        if m.group(3) == "py" and m.group(5) == "pybind11":
            continue  # `namespace py = pybind11;`, what torch/extension.h itself declares
        add(m.start(), f"renames pybind11 ({' '.join(m.group(0).split())}): hides what it uses")
    # strings: /proc, device files, preloads, Python symbols named for a lookup, and the task's
    # forbidden names in an operator name ("aten::geqrf" for a dispatcher lookup)
    bare = [f for f in forbidden or [] if "." not in f]
    for off, s in strings:
        for pat, why in _STRING_BAD:
            if pat.search(s.strip()):
                add(off, f"string {s[:40]!r}: {why}")
        name = s.strip().replace("::", ".")
        hit = bare and re.fullmatch(r"[A-Za-z_][\w.]*", name) and _forbidden_match(name, bare)
        if hit:
            add(off, f"string {s[:40]!r} names a forbidden routine ({hit})")
    # inline assembly (PTX in device code is fine): no system call, no raw machine code
    for m in re.finditer(r"\b(asm|__asm__|__asm)\b", code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        if re.match(r"[ \t]*(#|%:)", code[line_start:]):
            add(m.start(), "defines a macro around inline assembly: hides what it assembles")
            continue
        end, depth = m.end(), 0
        for end in range(m.end(), len(code)):
            if code[end] == "(":
                depth += 1
            elif code[end] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif code[end] == ";" and depth == 0:
                break
        text = "".join(s for off, s in strings if m.end() <= off < end)
        if _ASM_BAD.search(text):
            add(m.start(), f"assembles {text[:40]!r}: a system call or raw machine code")
    out.sort()
    seen: set[tuple[int, str]] = set()
    return [x for x in out if not (x in seen or seen.add(x))]


# --- flags -----------------------------------------------------------------------------------

_HOST_FLAG = re.compile(
    r"-O[0-3sgz]?|-Ofast|-g[0-3]?|-w|-DNDEBUG|-std=[\w+]+|--std=[\w+]+|-m[\w=.+-]+|"
    r"-W(?![lap],)[\w=+-]*|-U[A-Za-z_]\w*|-D[A-Za-z_]\w*(=[\w.+-]*)?|"
    r"-f(?!plugin|sanitize|instrument|profile|dump)[a-z0-9][\w=.+-]*"
)
_NVCC_FLAG = re.compile(
    r"-lineinfo|--?use_fast_math|--expt-relaxed-constexpr|--expt-extended-lambda|"
    r"--extended-lambda|-res-usage|--resource-usage|--restrict|-arch=\w+|-code=[\w,]+|"
    r"--gpu-architecture=\w+|--gpu-code=[\w,]+|-gencode=arch=\w+,code=\[?[\w,]+\]?|"
    r"--generate-code=arch=\w+,code=\[?[\w,]+\]?|arch=\w+,code=\[?[\w,]+\]?|"
    r"(-Xptxas|--ptxas-options)=?[\w=,.+-]*|-?-maxrregcount=?\d*|-t\d+|--threads=?\d*|"
    r"--(ftz|prec-div|prec-sqrt|fmad)=(true|false)|-(ftz|prec-div|prec-sqrt|fmad)=(true|false)|"
    r"-gencode|-arch|-Xptxas|--ptxas-options|-maxrregcount|\d+|sm_\w+|compute_\w+"
)
_LD_FLAG = re.compile(r"-l(cublas|cublasLt|cudart|cuda|curand|cufft|cusparse|cusolver|m|gomp)")


def check_flags(param: str, flags: list[str], forbidden: list[str]) -> list[str]:
    """Messages for each flag outside what a kernel build needs (optimisation, warnings,
    -std, -D of plain values, architecture and ptxas options, -l of CUDA libraries)."""
    from cockpit.harness.static_scan import _forbidden_match

    out: list[str] = []
    expect_host = False
    for flag in flags:
        f = flag.strip()
        hit = _forbidden_match(f, [x for x in forbidden if "." not in x])
        if hit:
            out.append(f"{param} flag {flag!r} names a forbidden routine ({hit})")
            continue
        if param == "extra_ldflags":
            ok = bool(_LD_FLAG.fullmatch(f))
        elif expect_host:
            ok = all(_HOST_FLAG.fullmatch(p) for p in f.split(",") if p)
        elif param == "extra_cuda_cflags":
            host = re.fullmatch(r"(-Xcompiler|--compiler-options)(=(.*))?", f)
            if host and host.group(3) is None:
                expect_host = True
                continue
            ok = bool(_NVCC_FLAG.fullmatch(f) or _HOST_FLAG.fullmatch(f)) or bool(
                host and all(_HOST_FLAG.fullmatch(p) for p in host.group(3).split(",") if p)
            )
        else:
            ok = bool(_HOST_FLAG.fullmatch(f))
        expect_host = False
        if ok and f.startswith("-D"):
            ok = not scan_native(f[2:].replace("=", " "), forbidden)
        if not ok:
            out.append(
                f"{param} flag {flag!r} is not one the judge knows to be safe (allowed: "
                "optimisation, warnings, -std, -D of plain values, GPU architecture and ptxas "
                "options, -l of CUDA libraries)"
            )
    if expect_host:
        out.append(f"{param} ends with -Xcompiler and no value")
    return out


# --- resolving load_inline's arguments ---------------------------------------------------------


class _Unresolved(Exception):
    """An expression the scan cannot turn into a constant."""


def _bindings(nodes: list[ast.AST]) -> dict[str, list[tuple[str, ast.AST]]]:
    """name -> every binding of it anywhere in the file: ("value", expr) for a plain
    `NAME = expr` (or `NAME: T = expr`), ("other", node) for anything else (parameters, loops,
    augmented assignments, imports, defs, walrus, del, global)."""
    out: dict[str, list[tuple[str, ast.AST]]] = {}
    plain: set[int] = set()  # target Names of plain assignments, recorded with their value

    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name):
                out.setdefault(t.id, []).append(("value", node.value))
                plain.add(id(t))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            out.setdefault(node.target.id, []).append(("value", node.value))
            plain.add(id(node.target))
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            if id(node) not in plain:
                names = [node.id]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.alias):
            # `from m import *` may rebind any name: none can then be read as a constant
            names = ["*"] if node.name == "*" else [(node.asname or node.name).split(".")[0]]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or (
            isinstance(node, ast.ExceptHandler) and node.name
        ):
            names = [node.name]
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names = list(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names = [node.name]
        for name in names:
            out.setdefault(name, []).append(("other", node))
    return out


class _Resolver:
    """Constant folding for strings, lists of strings and the numbers formatted into them."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        self.binds = _bindings(nodes)
        self.used_lists: set[str] = set()  # names bound to a list the scan read
        self.consumed: set[int] = set()  # Name nodes read through the resolver
        self._stack: set[str] = set()

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(
            node.value, str | int | float | bool | type(None)
        ):
            return node.value
        if isinstance(node, ast.Name):
            nodes = self.binds.get(node.id, [])
            if "*" in self.binds:
                raise _Unresolved("a star import may rebind any name")
            if len(nodes) != 1 or nodes[0][0] != "value" or node.id in self._stack:
                raise _Unresolved(f"{node.id} is not bound once to a constant")
            self._stack.add(node.id)
            try:
                v = self.value(nodes[0][1])
            finally:
                self._stack.discard(node.id)
            self.consumed.add(id(node))
            if isinstance(v, list | dict):
                self.used_lists.add(node.id)
            return v
        if isinstance(node, ast.List | ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                self._fail(node)
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                self._fail(node)
            return {self.value(k): self.value(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            try:
                if isinstance(node.op, ast.Add) and type(left) is type(right):
                    return left + right
                if (
                    isinstance(node.op, ast.Mult)
                    and isinstance(left, str | list)
                    and isinstance(right, int)
                ):
                    return left * right
                if isinstance(node.op, ast.Mod) and isinstance(left, str):
                    return left % (tuple(right) if isinstance(right, list) else right)
                if isinstance(left, int | float) and isinstance(right, int | float):
                    ops = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__",
                           ast.FloorDiv: "__floordiv__", ast.Div: "__truediv__"}  # fmt: skip
                    if type(node.op) in ops:
                        return getattr(left, ops[type(node.op)])(right)
            except (TypeError, ValueError):
                pass
            self._fail(node)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                    continue
                assert isinstance(v, ast.FormattedValue)
                x = self.value(v.value)
                if isinstance(x, list | dict):
                    self._fail(v)
                conv = {-1: lambda y: y, 115: str, 114: repr, 97: ascii}[v.conversion]
                spec = self.value(v.format_spec) if v.format_spec is not None else ""
                try:
                    parts.append(format(conv(x), spec))
                except (TypeError, ValueError):
                    self._fail(v)
            return "".join(parts)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords
            ):
                self._fail(node)
            base = self.value(node.func.value)
            if isinstance(base, str) and node.func.attr == "join" and len(node.args) == 1:
                items = self.value(node.args[0])
                if isinstance(items, list) and all(isinstance(s, str) for s in items):
                    return base.join(items)
            if isinstance(base, str) and node.func.attr == "format":
                args = [self.value(a) for a in node.args]
                kwargs = {k.arg: self.value(k.value) for k in node.keywords}
                if all(not isinstance(a, list | dict) for a in [*args, *kwargs.values()]):
                    try:
                        return base.format(*args, **kwargs)
                    except (IndexError, KeyError, ValueError):
                        pass
            self._fail(node)
        return self._fail(node)

    def _fail(self, node: ast.AST) -> Any:
        raise _Unresolved(type(node).__name__)


def _line_map(node: ast.AST, resolver: _Resolver) -> dict[int, int]:
    """Native line -> the candidate's line it is written on, where the source is string
    literals (directly, through names bound once, or a list of them); empty otherwise."""

    def follow(n: ast.AST) -> ast.AST:
        seen = 0
        while isinstance(n, ast.Name) and seen < 16:
            nodes = resolver.binds.get(n.id, [])
            if len(nodes) != 1 or nodes[0][0] != "value":
                break
            n, seen = nodes[0][1], seen + 1
        return n

    node = follow(node)
    items = [follow(e) for e in node.elts] if isinstance(node, ast.List | ast.Tuple) else [node]
    out: dict[int, int] = {}
    cursor = 1
    for item in items:
        if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
            return {}
        count = item.value.count("\n")
        exact = item.end_lineno is not None and item.end_lineno - item.lineno == count
        for k in range(count + 1):
            out[cursor + k] = item.lineno + k if exact else item.lineno
        cursor += count + 1
    return out


def _as_texts(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return value
    return None


def _nodes_and_parents(tree: ast.AST) -> tuple[list[ast.AST], dict[int, ast.AST]]:
    """Every node of the tree (one walk), and each node's parent by id."""
    nodes: list[ast.AST] = []
    parents: dict[int, ast.AST] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            stack.append(child)
    return nodes, parents


def _import_aliases(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """Local names bound to torch.utils.cpp_extension and to its load_inline."""
    modules, funcs = set(), set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == CPP_EXTENSION and a.asname:
                    modules.add(a.asname)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full == CPP_EXTENSION:
                    modules.add(a.asname or a.name)
                elif full == f"{CPP_EXTENSION}.load_inline":
                    funcs.add(a.asname or a.name)
    return modules, funcs


def dotted(node: ast.AST) -> str:
    """`a.b.c` for an attribute chain on a name, "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def scan_python(tree: ast.AST, forbidden: list[str], add: Callable[[ast.AST, str], None]) -> None:
    """Report, through `add(node, message)`, every native-code rule the candidate's syntax tree
    breaks: loaders other than load_inline, load_inline reached other than by a direct call,
    and each load_inline call's arguments (resolved and scanned)."""
    nodes, parents = _nodes_and_parents(tree)
    modules, funcs = _import_aliases(nodes)
    imported = {
        (a.asname or a.name).split(".")[0]
        for n in nodes
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    resolver = _Resolver(nodes)
    calls: list[ast.Call] = []

    def direct_call_of(node: ast.AST) -> ast.Call | None:
        p = parents.get(id(node))
        return p if isinstance(p, ast.Call) and p.func is node else None

    def use_of_load_inline(node: ast.AST) -> None:
        """load_inline, reached by attribute or by its imported name: called directly (its
        sources read below), or refused."""
        call = direct_call_of(node)
        if call is None:
            add(node, "uses load_inline other than by calling it: it must be called "
                      "directly so the judge can read its sources")  # fmt: skip
        else:
            calls.append(call)

    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names]
            )
            for name in names:
                root = name.split(".")[0]
                if root in NATIVE_IMPORTS:
                    add(node, f"imports {root}: {NATIVE_IMPORTS[root]}")
                for chain, why in NATIVE_CHAINS.items():
                    if name == chain or name.startswith(chain + "."):
                        add(node, f"imports {chain}: {why}")
                if name.startswith(CPP_EXTENSION + ".") and name not in (
                    f"{CPP_EXTENSION}.load_inline",
                ):
                    what = name.removeprefix(CPP_EXTENSION + ".")
                    add(node, f"imports {what} from {CPP_EXTENSION}: only load_inline may build "
                              "native code (its sources are strings the judge reads)")  # fmt: skip
                if isinstance(node, ast.ImportFrom) and name.split(".")[-1] in NATIVE_ATTRS:
                    add(node, f"imports {name}: {NATIVE_ATTRS[name.split('.')[-1]]}")
        elif isinstance(node, ast.Attribute):
            name = dotted(node)
            if node.attr in NATIVE_ATTRS:
                add(node, f"uses .{node.attr}: {NATIVE_ATTRS[node.attr]}")
            for chain, why in NATIVE_CHAINS.items():
                if name == chain or name.startswith(chain + "."):
                    add(node, f"uses {chain}: {why}")
            if node.attr == "cpp_extension":
                p = parents.get(id(node))
                if not (isinstance(p, ast.Attribute) and p.attr == "load_inline"):
                    kind = f".{p.attr}" if isinstance(p, ast.Attribute) else "the module itself"
                    add(node, f"uses {kind} of cpp_extension: only a direct call of load_inline "
                              "may build native code (its sources are strings the judge reads)")  # fmt: skip
            if node.attr == "load_inline":
                use_of_load_inline(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in modules:
                p = parents.get(id(node))
                if not (isinstance(p, ast.Attribute) and p.attr == "load_inline"):
                    add(node, "uses the cpp_extension module other than to call load_inline: "
                              "only load_inline may build native code")  # fmt: skip
            if node.id in funcs:
                use_of_load_inline(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and dotted(node.args[0]).split(".")[0] in imported
            and not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))
        ):
            add(node, f"reads an attribute of {dotted(node.args[0])} by computed name: the judge "
                      "cannot see what it reaches (a native-code loader among others)")  # fmt: skip
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("__getattribute__", "__getattr__")
            and dotted(node.value).split(".")[0] in imported
        ):
            add(node, f"uses {dotted(node)}: reads a module's attributes by computed name")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if re.fullmatch(r"[A-Za-z_][\w.]*", text) and set(text.split(".")) & _LOADER_WORDS:
                add(node, f"string {node.value!r} names a native-code loader: reached by "
                          "computed name, the judge cannot read what it builds")  # fmt: skip

    for call in calls:
        _check_call(call, resolver, forbidden, add)
    # a list the scan read must not be changed afterwards (append, item assignment, a function
    # that receives it): every other use of its name is refused
    for node in nodes:
        if (
            isinstance(node, ast.Name)
            and node.id in resolver.used_lists
            and isinstance(node.ctx, ast.Load)
            and id(node) not in resolver.consumed
        ):
            add(node, f"uses {node.id}, a list of native sources or flags, other than as "
                      "load_inline's argument: the judge could not be sure what it builds")  # fmt: skip


def _check_call(
    call: ast.Call, resolver: _Resolver, forbidden: list[str], add: Callable[[ast.AST, str], None]
) -> None:
    args: dict[str, ast.AST] = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred) or i >= len(_LOAD_INLINE_PARAMS):
            add(call, "passes load_inline's arguments with * or beyond its parameters: native "
                      "sources must be string constants the judge can read")  # fmt: skip
            return
        args[_LOAD_INLINE_PARAMS[i]] = a
    for k in call.keywords:
        if k.arg is None:
            add(call, "passes load_inline's arguments with **: native sources must be string "
                      "constants the judge can read")  # fmt: skip
            return
        args[k.arg] = k.value

    def resolved(param: str) -> Any:
        node = args[param]
        try:
            return resolver.value(node)
        except _Unresolved:
            add(node, f"load_inline's {param} is not a string constant the judge can read "
                      "(native sources must be string constants: literals, names bound once "
                      "to them, +, f-strings, join or format of constants)")  # fmt: skip
            return _Unresolved

    def unreadable(param: str) -> None:
        add(args[param], f"load_inline's {param} must be strings or lists of strings")

    texts: dict[str, list[str]] = {}
    for param in _SOURCES:
        if param not in args:
            continue
        v = resolved(param)
        if v is _Unresolved:
            continue
        if v is None:
            texts[param] = []
        elif (t := _as_texts(v)) is None:
            unreadable(param)
        else:
            texts[param] = t
    for param in args:
        if param not in _LOAD_INLINE_PARAMS:
            add(args[param], f"passes load_inline an unknown argument {param!r}")
    if "name" in args:
        v = resolved("name")
        if v is not _Unresolved and not (isinstance(v, str) and re.fullmatch(r"[A-Za-z_]\w*", v)):
            add(args["name"], "load_inline's name must be an identifier")
    bindings: list[str] = []
    if "functions" in args:
        v = resolved("functions")
        if v is not _Unresolved and v is not None:
            items = (
                {v: v} if isinstance(v, str) else {f: f for f in v} if isinstance(v, list) else v
            )
            if not isinstance(items, dict) or not all(
                isinstance(f, str) and isinstance(d, str) for f, d in items.items()
            ):
                add(args["functions"], "load_inline's functions must be names (or names to "
                                       "docstrings)")  # fmt: skip
            else:
                for f, doc in items.items():
                    if not re.fullmatch(r"[A-Za-z_]\w*", f) or re.search(r'["\\\n]', doc):
                        add(args["functions"], f"load_inline's function {f!r} (or its docstring) is "
                                               "not a plain name: it is pasted into the generated "
                                               "bindings")  # fmt: skip
                    bindings.append(f'm.def("{f}", {f}, "{doc}");')
    for param in _FLAGS:
        if param not in args:
            continue
        v = resolved(param)
        if v is _Unresolved or v is None:
            continue
        flags = _as_texts(v)
        if flags is None:
            unreadable(param)
            continue
        for msg in check_flags(param, flags, forbidden):
            add(args[param], msg)
    if "extra_include_paths" in args:
        v = resolved("extra_include_paths")
        if v is not _Unresolved and v not in (None, []):
            add(args["extra_include_paths"], "load_inline's extra_include_paths reads headers "
                                             "outside the candidate's text")  # fmt: skip
    if "build_directory" in args:
        v = resolved("build_directory")
        if v is not _Unresolved and v is not None:
            add(args["build_directory"], "load_inline's build_directory names a path: the build "
                                         "goes where the arena puts it")  # fmt: skip
    for param in _BOOLS & set(args):
        v = resolved(param)
        if v is not _Unresolved and not isinstance(v, bool | type(None)):
            add(args[param], f"load_inline's {param} must be True, False or None")
    for param, parts in texts.items():
        text = "\n".join(parts + (bindings if param == "cpp_sources" else []))
        where = _line_map(args[param], resolver)
        for line, msg in scan_native(text, forbidden):
            at = where.get(line) if where else None
            node = SimpleNamespace(lineno=at) if at else args[param]
            add(node, f"{param} line {line}: {msg}")
    if "cpp_sources" not in texts and bindings:
        for _line, msg in scan_native("\n".join(bindings), forbidden):
            add(args["functions"], f"functions: {msg}")


def iter_native_findings(tree: ast.AST, forbidden: list[str]) -> Iterator[tuple[int, str]]:
    """(line, message) for every native-code rule the candidate breaks."""
    found: list[tuple[int, str]] = []
    scan_python(tree, forbidden, lambda node, msg: found.append((getattr(node, "lineno", 0), msg)))
    yield from sorted(found, key=lambda f: f[0])
