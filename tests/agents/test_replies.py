"""Reply parsing: a whole file in a fence, or a unified diff applied strictly; clear reasons."""

from __future__ import annotations

import pytest
from agents_helpers import GOOD, PARENT, reply_with

from cockpit.agents.replies import ReplyError, apply_diff, parse_reply

DIFF = """```diff
--- a/kernel.py
+++ b/kernel.py
@@ -8,2 +8,3 @@
 def kernel(x: torch.Tensor) -> torch.Tensor:
-    return torch.softmax(x, dim=-1)
+    y = torch.softmax(x.float(), dim=-1)
+    return y.to(x.dtype)
```
Upcast to float32 for accuracy."""


def kind_of(text: str, parent: str = PARENT) -> str:
    with pytest.raises(ReplyError) as info:
        parse_reply(text, parent, max_chars=5000)
    return info.value.kind


def test_full_file_in_a_fence_is_the_candidate():
    parsed = parse_reply(reply_with(GOOD), PARENT)
    assert parsed.source == GOOD and parsed.form == "file"
    assert "subtract the row max" in parsed.note


def test_the_last_file_that_defines_kernel_wins():
    draft = GOOD.replace("e / e.sum", "e / (e.sum")  # would not parse, but a later file follows
    text = f"Draft:\n```python\n{draft}```\nFinal:\n```python\n{GOOD}```"
    assert parse_reply(text, PARENT).source == GOOD


def test_diff_is_applied_to_the_parent():
    parsed = parse_reply(DIFF, PARENT)
    assert parsed.form == "diff"
    assert "y = torch.softmax(x.float(), dim=-1)\n    return y.to(x.dtype)\n" in parsed.source
    assert "return torch.softmax(x, dim=-1)" not in parsed.source
    assert parsed.source.startswith('"""Baseline')


def test_diff_with_a_wrong_line_number_applies_where_its_lines_match_exactly():
    parsed = parse_reply(DIFF.replace("@@ -8,2 +8,3 @@", "@@ -3,2 +3,3 @@"), PARENT)
    assert "return y.to(x.dtype)" in parsed.source


def test_diff_whose_context_differs_is_refused_naming_the_line():
    bad = DIFF.replace(" def kernel(x: torch.Tensor)", " def kernel(x)")
    with pytest.raises(ReplyError) as info:
        parse_reply(bad, PARENT)
    assert info.value.kind == "diff"
    assert "def kernel(x)" in info.value.message and "does not match" in info.value.message


def test_diff_with_two_hunks_applies_both_in_order():
    parent = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"
    diff = "@@ -1,2 +1,2 @@\n-a = 1\n+a = 10\n b = 2\n@@ -4,2 +4,2 @@\n d = 4\n-e = 5\n+e = 50\n"
    assert apply_diff(parent, diff) == "a = 10\nb = 2\nc = 3\nd = 4\ne = 50\n"


def test_chatter_without_code_is_no_code():
    assert kind_of("I would try a persistent kernel with a larger block size next.") == "no_code"


def test_code_that_does_not_parse_is_a_syntax_error_with_its_line():
    broken = GOOD.replace("e / e.sum(dim=-1, keepdim=True)", "e / e.sum(dim=-1, keepdim=True")
    with pytest.raises(ReplyError) as info:
        parse_reply(reply_with(broken), PARENT)
    assert info.value.kind == "syntax"
    assert "SyntaxError" in info.value.message and "line" in info.value.message


def test_empty_and_whitespace_replies_are_empty():
    assert kind_of("") == "empty"
    assert kind_of("  \n\n ") == "empty"


def test_huge_reply_is_refused_before_parsing():
    assert kind_of(reply_with(GOOD) + "x" * 6000) == "huge"


def test_a_fence_that_never_closes_is_truncated():
    assert kind_of("Here:\n```python\nimport torch\ndef kernel(x):\n    return x") == "truncated"


def test_a_fragment_without_kernel_is_refused():
    assert kind_of("```python\nBLOCK = 256\n```") == "no_kernel"


def test_unfenced_full_file_is_accepted():
    assert parse_reply(GOOD, PARENT).source == GOOD
