"""Turning a model's reply into a candidate file: a whole file in a fenced block, or a unified
diff against the parent applied strictly.

Strict means the diff's context and removed lines must equal the parent's lines exactly
(whitespace included); only the hunk's stated line number may be off, as with `patch`, because
models count lines badly but copy them well. A fuzzy match would apply a change the model did not
mean to a line it did not see. Every refusal is a `ReplyError` whose `kind` and one-line message
go into the record and, quoted, into the one repair prompt.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                   re.MULTILINE | re.DOTALL)
OPEN_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([\w+.-]*)", re.MULTILINE)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
DIFF_LANGS = {"diff", "patch", "udiff"}


class ReplyError(ValueError):
    """A reply with no usable code. kind: empty | huge | no_code | truncated | syntax |
    no_kernel | diff | duplicate (set by the proposer, which knows what was tried)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def line(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass
class ParsedReply:
    source: str
    form: str  # file | diff
    note: str  # the prose around the code, shortened


def parse_reply(text: str | None, parent_source: str, *, max_chars: int = 120_000) -> ParsedReply:
    """The candidate file a reply stands for, or a ReplyError saying why there is none."""
    text = text or ""
    if not text.strip():
        raise ReplyError("empty", "the reply was empty")
    if len(text) > max_chars:
        raise ReplyError("huge", f"the reply is {len(text):,} characters, over the {max_chars:,} limit; "
                                 "send only the kernel file or a diff")
    blocks = [(m.group("lang").lower(), m.group("body")) for m in FENCE.finditer(text)]
    note = _note(FENCE.sub("", text))
    diffs = [b for lang, b in blocks if lang in DIFF_LANGS or (not lang and _looks_like_diff(b))]
    files = [b for lang, b in blocks if lang not in DIFF_LANGS and not _looks_like_diff(b)]
    if not blocks:
        if _unclosed_fence(text):
            raise ReplyError("truncated", "the code block is never closed (the reply was cut off, "
                                          "probably at max_tokens); send a shorter file or a diff")
        if _looks_like_diff(text):
            return _from_diff(text, parent_source, note="")
        if _defines_kernel_text(text) and _parses(text):
            return ParsedReply(_finish(text), "file", "")
        raise ReplyError("no_code", f"the reply has no code block ({len(text):,} characters of prose); "
                                    "send the whole file in a ```python block or a ```diff")
    with_kernel = [b for b in files if _defines_kernel_text(b)]
    if with_kernel:
        # the last full file wins: models often sketch first and give the final version last
        source = _finish(with_kernel[-1])
        _check_source(source)
        return ParsedReply(source, "file", note)
    if diffs:
        return _from_diff(diffs[-1], parent_source, note)
    if files:
        raise ReplyError("no_kernel", "the code block does not define kernel(...): send the whole file, "
                                      "not a fragment (or a diff against the current code)")
    raise ReplyError("no_code", "the reply has no usable code block")


def check_source(source: str) -> None:
    """Public form of the checks a parsed file passes: it parses and defines `kernel`."""
    _check_source(source)


def _check_source(source: str) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        line = ""
        if exc.lineno and 0 < exc.lineno <= len(source.splitlines()):
            line = f": {source.splitlines()[exc.lineno - 1].strip()[:120]!r}"
        raise ReplyError("syntax", f"SyntaxError: {exc.msg} (line {exc.lineno}){line}") from None
    if not any(_is_kernel(node) for node in tree.body):
        raise ReplyError("no_kernel", "the file does not define a module-level kernel(...)")


def _is_kernel(node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name == "kernel"
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "kernel" for t in node.targets)
    if isinstance(node, ast.ImportFrom):
        return any((a.asname or a.name) == "kernel" for a in node.names)
    if isinstance(node, ast.If | ast.Try):
        body = list(node.body) + list(getattr(node, "orelse", []))
        return any(_is_kernel(n) for n in body)
    return False


def _defines_kernel_text(text: str) -> bool:
    return bool(re.search(r"^(async\s+)?def\s+kernel\s*\(|^kernel\s*=", text, re.MULTILINE))


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _finish(source: str) -> str:
    return source.rstrip() + "\n"


def _note(prose: str) -> str:
    words = " ".join(prose.split())
    return words[:300] + ("…" if len(words) > 300 else "")


def _unclosed_fence(text: str) -> bool:
    return len(OPEN_FENCE.findall(text)) % 2 == 1


def _looks_like_diff(text: str) -> bool:
    lines = text.lstrip().splitlines()
    has_hunk = any(HUNK.match(ln) for ln in lines)
    has_header = any(ln.startswith("--- ") for ln in lines) and any(ln.startswith("+++ ") for ln in lines)
    return has_hunk and (has_header or lines[0].startswith("@@"))


# --- unified diffs --------------------------------------------------------------------------------
@dataclass
class Hunk:
    header: str
    old_start: int
    old: list[str]
    new: list[str]


def parse_hunks(diff: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    cur: Hunk | None = None
    for raw in diff.rstrip().splitlines():
        m = HUNK.match(raw)
        if m:
            cur = Hunk(raw.split("@@")[1].strip(), int(m.group(1)), [], [])
            hunks.append(cur)
            continue
        if cur is None or (raw.startswith(("--- ", "+++ ", "diff ", "index ")) and not cur.old + cur.new):
            continue  # file headers before (or between) hunks
        if raw.startswith("\\"):
            continue  # "\ No newline at end of file"
        tag, line = (raw[:1], raw[1:]) if raw else (" ", "")  # a blank context line lost its space
        if tag == " ":
            cur.old.append(line)
            cur.new.append(line)
        elif tag == "-":
            cur.old.append(line)
        elif tag == "+":
            cur.new.append(line)
        else:
            raise ReplyError("diff", f"hunk @@ {cur.header} @@: line {raw[:80]!r} does not start with ' ', '-' or '+'")
    return hunks


def apply_diff(parent: str, diff: str) -> str:
    """Apply `diff` to `parent` strictly (exact lines; a wrong line number is searched for)."""
    hunks = parse_hunks(diff)
    if not hunks:
        raise ReplyError("diff", "the diff has no @@ hunks")
    lines = parent.splitlines()
    out: list[str] = []
    pos = 0  # next parent line not yet copied
    for k, h in enumerate(hunks, start=1):
        want = h.old_start - 1 if h.old else h.old_start  # a pure insertion goes after old_start
        at = _locate(lines, h.old, max(want, 0), pos)
        if at is None:
            raise ReplyError("diff", f"hunk {k} (@@ {h.header} @@) does not match the current code: "
                                     f"{_mismatch(lines, h.old, max(want, 0))}")
        out += lines[pos:at] + h.new
        pos = at + len(h.old)
    out += lines[pos:]
    return "\n".join(out) + "\n"


def _locate(lines: list[str], old: list[str], want: int, lo: int) -> int | None:
    """Where `old` sits in `lines` at or after `lo`: the stated place if it matches there, else
    the nearest exact match (patch's offset search, no fuzz)."""
    n = len(old)
    if not old:
        return min(max(want, lo), len(lines))
    matches = [i for i in range(lo, len(lines) - n + 1) if lines[i:i + n] == old]
    if not matches:
        return None
    return min(matches, key=lambda i: (abs(i - want), i))


def _mismatch(lines: list[str], old: list[str], want: int) -> str:
    for j, expect in enumerate(old):
        i = want + j
        have = lines[i] if i < len(lines) else None
        if have != expect:
            where = f"line {i + 1}"
            got = "the file ends" if have is None else f"the code has {have.strip()[:80]!r}"
            return f"expected {expect.strip()[:80]!r} at {where}, {got} (and no exact match elsewhere)"
    return "its lines are not found in order"


def _from_diff(diff: str, parent: str, note: str) -> ParsedReply:
    if not parent.strip():
        raise ReplyError("diff", "a diff needs a current file to apply to; send the whole file")
    source = apply_diff(parent, diff)
    _check_source(source)
    return ParsedReply(source, "diff", note)
