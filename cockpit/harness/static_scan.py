"""Static integrity rules, applied to a candidate's source before it is ever imported.

The scan is the cheap first line; every rule that matters is also enforced dynamically (the
forbidden aten ops replaced in the dispatcher, C-call profile hook, identity snapshots), because string tricks defeat any
static scan. What the scan adds is *clear feedback*: "line 12 calls torch.geqrf" is something an
agent can act on, where "integrity" is not.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from cockpit.harness import native_scan

# Modules a kernel has no business importing: process control, network, introspection.
BANNED_IMPORTS = {
    "subprocess": "starts processes",
    "multiprocessing": "starts processes",
    "concurrent": "runs work on background threads",
    "threading": "runs work on background threads",
    "_thread": "runs work on background threads",
    "socket": "opens network connections",
    "urllib": "opens network connections",
    "http": "opens network connections",
    "requests": "opens network connections",
    "signal": "installs signal handlers",
    "gc": "walks the interpreter's objects (harness internals)",
    "inspect": "walks the interpreter's frames (harness internals)",
    "ctypes": "calls native code outside the allowed backends",
    "cffi": "calls native code outside the allowed backends",
    "pickle": "loads precomputed results",
    "shelve": "loads precomputed results",
    "cockpit": "imports the harness",
    "reference": "imports the task reference",
    "builtins": "patches builtins",
    "importlib": "imports modules by computed name",
    "scipy": "calls library routines outside the allowed backends",
    "traceback": "walks the interpreter's frames (harness internals)",
    "__main__": "reaches the harness's own module",
    "io": "reads or writes files",
    "shutil": "reads or writes files",
    "tempfile": "writes files",
}

# Attribute names that reach into the interpreter or the harness, whatever they hang off.
BANNED_ATTRS = {
    "_getframe": "inspects the caller's frames",
    "setprofile": "replaces the profiler hook",
    "settrace": "replaces the trace hook",
    "getprofile": "reads the profiler hook",
    "gettrace": "reads the trace hook",
    "_exit": "ends the process",
    "exit": "ends the process",
    "kill": "signals processes",
    "system": "runs shell commands",
    "popen": "runs shell commands",
    "environ": "reads the environment",
    "getenv": "reads the environment",
    "_python_dispatch": "inspects the dispatcher state",
    "_get_current_dispatch_mode": "inspects the dispatcher state",
    "set_float32_matmul_precision": "changes global precision flags",
    "allow_tf32": "changes global precision flags",
    "allow_fp16_reduced_precision_reduction": "changes global precision flags",
    "allow_bf16_reduced_precision_reduction": "changes global precision flags",
    "set_flush_denormal": "changes global precision flags",
    "set_default_dtype": "changes global precision flags",
    "set_num_threads": "changes the thread pool",
    # torch.cuda.Stream / torch.cuda.stream are allowed: overlapping work on a stream forked
    # from the timed one is legitimate (the QR look-ahead), and the arena makes the timed stream
    # wait for every stream made through torch.cuda.Stream after each call (what is not joined
    # is timed, not hidden; arena._TrackedStream). Streams the arena cannot see are still
    # refused: raw handles, torch.Stream, a hand-set current stream, the class's base
    # (docs/decisions/0018-side-streams-tracked-joined-fenced.md).
    "ExternalStream": "runs work on a side stream",
    "_set_stream": "runs work on a side stream",
    "set_stream": "runs work on a side stream",
    "accessPolicyWindow": "pins data in L2 (persisting cache)",
    "cudaStreamSetAttribute": "pins data in L2 (persisting cache)",
    "perf_counter": "reads or patches the harness timers",
    "perf_counter_ns": "reads or patches the harness timers",
    "elapsed_time": "reads or patches the harness timers",
    "__traceback__": "walks the interpreter's frames (harness internals)",
    "tb_frame": "walks the interpreter's frames (harness internals)",
    "f_back": "walks the interpreter's frames (harness internals)",
    "f_locals": "walks the interpreter's frames (harness internals)",
    "f_globals": "walks the interpreter's frames (harness internals)",
    "gi_frame": "walks the interpreter's frames (harness internals)",
    "cr_frame": "walks the interpreter's frames (harness internals)",
    "__code__": "rewrites functions",
    "__globals__": "reads or rewrites another module's globals",
    "__closure__": "reads or rewrites closures",
    "__subclasses__": "walks the class hierarchy (harness internals)",
    "__bases__": "walks the class hierarchy (harness internals)",
    "__base__": "walks the class hierarchy (harness internals)",
    "__mro__": "walks the class hierarchy (harness internals)",
    "mro": "walks the class hierarchy (harness internals)",
    "__dict__": "reads or rewrites objects' internals",
    "read_text": "reads files",
    "write_text": "writes files",
    "read_bytes": "reads files",
    "write_bytes": "writes files",
    "open": "opens files",
    "remove": "deletes files",
    "unlink": "deletes files",
    "rmtree": "deletes files",
}
# Dotted prefixes banned as a whole.
BANNED_CHAINS = {
    "sys.modules": "reaches other modules' state (the harness's own included)",
    "torch._C": "uses torch's private C bindings (dispatcher switches)",
    "torch.Stream": "runs work on a stream the harness does not see (use torch.cuda.Stream)",
}

BANNED_CALLS = {
    "exec": "runs code built at run time",
    "eval": "runs code built at run time",
    "compile": "builds code at run time",
    "__import__": "imports modules by computed name",
    "open": "reads or writes files",
    "globals": "rewrites module globals",
    "vars": "reads objects' internals",
    "setattr": "patches objects by computed name",
    "delattr": "patches objects by computed name",
    "breakpoint": "stops the process",
    "input": "reads standard input",
}

# Assigning to an attribute of these modules is monkeypatching them.
PROTECTED_MODULES = {"torch", "time", "triton", "numpy", "np", "sys", "os", "math", "tl"}


# Banned wherever they appear (an alias `f = eval` is as bad as a call); the rest of BANNED_CALLS
# only when called by that name and not rebound in the file (`input` is also a common parameter
# name, and `from torch import compile` is not the builtin).
ALWAYS_BANNED = {"exec", "eval", "__import__", "globals", "setattr", "delattr", "breakpoint"}
_IDENT = re.compile(r"[A-Za-z_][\w.]*")


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the file binds itself: parameters, assignments, imports, defs."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
    return out


def _is_main_guard(tree: ast.AST, const: ast.Constant) -> bool:
    """`if __name__ == "__main__":` is a harmless script guard."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(c is const for c in node.comparators):
            left = node.left
            return isinstance(left, ast.Name) and left.id == "__name__"
    return False


@dataclass
class Finding:
    kind: str  # syntax | forbidden_call | static_rule | native_code
    line: int
    message: str


# `a.b.c` for an attribute chain on a name, "" for anything else (shared with the native scan)
_dotted = native_scan.dotted


def _forbidden_match(text: str, forbidden: list[str]) -> str | None:
    """Match a name, attribute chain or string against the task's forbidden list.

    A bare entry ("geqrf") matches a whole dotted component, or any substring when it is longer
    than five characters ("cusolver" in "libcusolver.so"). A qualified entry ("numpy.linalg.qr")
    matches its components after the root, which may be aliased (`np.linalg.qr`, `A.qr`).
    """
    low = text.lower()
    tokens = low.split(".")
    for f in forbidden:
        parts = f.lower().split(".")
        if len(parts) == 1:
            if parts[0] in tokens or (len(parts[0]) > 5 and parts[0] in low):
                return f
            continue
        tail = parts[1:]
        n = len(tail)
        if len(tokens) > n and any(
            tokens[i : i + n] == tail for i in range(1, len(tokens) - n + 1)
        ):
            return f
    return None


def scan(
    source: str, forbidden: list[str] | None = None, filename: str = "candidate.py"
) -> list[Finding]:
    """Return every rule the source breaks; empty means it may be loaded.

    `forbidden` holds the task's forbidden names: qualified ("torch.geqrf") or bare substrings
    ("geqrf", "cusolver"); both are matched in names, attribute chains and string constants, so
    `getattr(torch, "geqrf")` and `torch.ops.aten.geqrf` are caught here, and `"geq" + "rf"`
    by the arena's forbidden-op watch at run time.
    """
    forbidden = forbidden or []
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return [Finding("syntax", exc.lineno or 0, f"{exc.msg} (line {exc.lineno})")]
    out: list[Finding] = []
    bound = _bound_names(tree)

    def add(kind: str, node: ast.AST, message: str) -> None:
        out.append(Finding(kind, getattr(node, "lineno", 0), message))

    # super() as Python writes it in a method is fine; super(T, obj), or super under another
    # name, reaches a base class's methods past T's own: the arena's torch.cuda.Stream records
    # the streams it makes in its __new__, and super(torch.cuda.Stream, ...).__new__ would not
    plain_super = {
        id(n.func)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "super"
        and not n.args
        and not n.keywords
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            if isinstance(node, ast.ImportFrom):
                names += [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                root = name.split(".")[0]
                if root in BANNED_IMPORTS:
                    add("static_rule", node, f"imports {root}: {BANNED_IMPORTS[root]}")
                    break
                hit = _forbidden_match(name, forbidden)
                if hit:
                    add("forbidden_call", node, f"imports {name} (forbidden: {hit})")
                    break
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in BANNED_CALLS and name not in ALWAYS_BANNED and name not in bound:
                add("static_rule", node, f"calls {name}(): {BANNED_CALLS[name]}")
        elif isinstance(node, ast.Attribute):
            if node.attr in BANNED_ATTRS:
                add("static_rule", node, f"uses .{node.attr}: {BANNED_ATTRS[node.attr]}")
            elif "dispatch" in node.attr.lower():
                add("static_rule", node, f"uses .{node.attr}: inspects or switches the dispatcher")
            dotted = _dotted(node)
            for chain, why in BANNED_CHAINS.items():
                if dotted == chain or dotted.startswith(chain + "."):
                    add("static_rule", node, f"uses {chain}: {why}")
            hit = dotted and _forbidden_match(dotted, forbidden)
            if hit:
                add("forbidden_call", node, f"uses {dotted} (forbidden: {hit})")
        elif isinstance(node, ast.Name):
            if node.id == "super" and id(node) not in plain_super and node.id not in bound:
                add(
                    "static_rule",
                    node,
                    "uses super with arguments or under another name: reaches past a class's "
                    "own methods (harness internals)",
                )
            if node.id in ALWAYS_BANNED and node.id not in bound:
                add("static_rule", node, f"uses {node.id}(): {BANNED_CALLS[node.id]}")
            elif node.id in ("__builtins__", "__loader__", "__spec__"):
                add("static_rule", node, f"uses {node.id}: reaches the import machinery")
            hit = _forbidden_match(node.id, [f for f in forbidden if "." not in f])
            if hit:
                add("forbidden_call", node, f"uses {node.id} (forbidden: {hit})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if text == "__main__" and not _is_main_guard(tree, node):
                add("static_rule", node, "names __main__: reaches the harness's own module")
            # only identifier-like strings (a name built for getattr), not prose in a docstring
            hit = _IDENT.fullmatch(text) and _forbidden_match(
                text, [f for f in forbidden if "." not in f]
            )
            if hit:
                add(
                    "forbidden_call",
                    node,
                    f"string {node.value!r} names a forbidden routine ({hit})",
                )
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute):
                    root = _dotted(t).split(".")[0]
                    if root in PROTECTED_MODULES:
                        add("static_rule", node, f"assigns {_dotted(t)}: monkeypatches {root}")
        elif isinstance(node, ast.Global):
            pass
    # native code (load_inline's C++/CUDA sources, and every other route to native code)
    for line, message in native_scan.iter_native_findings(tree, forbidden):
        out.append(Finding(native_scan.KIND, line, message))
    # one finding per rule and line (ast.walk visits every prefix of an attribute chain); native
    # findings keep each message, since one argument's line carries every line of its source
    seen, unique = set(), []
    for f in out:
        key = (f.kind, f.line, f.message if f.kind == native_scan.KIND else "")
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique
