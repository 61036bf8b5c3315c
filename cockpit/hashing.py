"""The identity of a candidate's source, shared by the engine (duplicates) and the proposers (which
skip code already tried). Standard library only, so any layer may import it."""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize


def source_hash(source: str) -> str:
    """Hash of the code with comments, docstring-free formatting and whitespace normalized, so a
    proposal that only re-words comments is recognised as a duplicate and not re-evaluated."""
    try:
        text = ast.unparse(ast.parse(source))
    except SyntaxError:
        toks = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(source).readline):
                if tok.type not in (
                    tokenize.COMMENT,
                    tokenize.NL,
                    tokenize.NEWLINE,
                    tokenize.INDENT,
                    tokenize.DEDENT,
                ):
                    toks.append(tok.string)
        except (tokenize.TokenError, IndentationError, SyntaxError):
            toks = source.split()
        text = " ".join(toks)
    return hashlib.sha256(text.encode()).hexdigest()
