"""The records a newcomer reads link only to files that exist inside the repository.

README.md, NOTES.md, BENCHMARKS.md and everything under docs/ are checked: every relative
Markdown link must resolve to a file or folder of this checkout (a clone has no `../shared`),
and every results manifest must list files that are really there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# [text](target) and [text](target "title"); images too. Targets with a scheme are external.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
# `code` spans that name a path: up out of the folder, or into the recorded results and docs.
# Placeholders (<run>, *, …) and command lines (spaces) are not paths.
CODE_PATH = re.compile(r"`((?:\.\./|bench/results/|docs/)[^`\s<>*…]+)`")


def _documents() -> list[Path]:
    docs = [ROOT / name for name in ("README.md", "NOTES.md", "BENCHMARKS.md")]
    docs += sorted((ROOT / "docs").rglob("*.md"))
    return [d for d in docs if d.is_file()]


def broken_links(doc: Path, root: Path = ROOT) -> list[str]:
    """The relative links of `doc` that leave `root` or name nothing there, as 'line N: target'."""
    bad = []
    in_code = False
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(line):
            if EXTERNAL.match(target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            resolved = (doc.parent / path).resolve()
            if not resolved.is_relative_to(root):
                bad.append(f"line {n}: {target} (outside the repository)")
            elif not resolved.exists():
                bad.append(f"line {n}: {target} (no such file)")
        for target in CODE_PATH.findall(line):
            base = doc.parent if target.startswith("../") else root
            resolved = (base / target).resolve()
            if not resolved.is_relative_to(root):
                bad.append(f"line {n}: `{target}` (outside the repository)")
            elif not resolved.exists():
                bad.append(f"line {n}: `{target}` (no such file)")
    return bad


def test_the_records_exist() -> None:
    names = {d.relative_to(ROOT).as_posix() for d in _documents()}
    for required in (
        "README.md",
        "NOTES.md",
        "BENCHMARKS.md",
        "docs/harness-protocol.md",
        "docs/task-format.md",
        "docs/architecture.md",
    ):
        assert required in names


@pytest.mark.parametrize("doc", _documents(), ids=lambda d: d.relative_to(ROOT).as_posix())
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    assert broken_links(doc) == []


def test_a_broken_or_escaping_link_is_reported(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("x")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](there.md) [anchor](there.md#a) [web](https://example.org) [self](#top)\n"
        "```\n[in code](missing-in-code.md)\n```\n"
        "[gone](missing.md) [out](../elsewhere/docs/x.md)\n"
        "see `../shared/docs/p.md`, `bench/results/run/gone.json`, `bench/results/<run>/`\n"
    )
    assert broken_links(doc, root=tmp_path) == [
        "line 5: missing.md (no such file)",
        "line 5: ../elsewhere/docs/x.md (outside the repository)",
        "line 6: `../shared/docs/p.md` (outside the repository)",
        "line 6: `bench/results/run/gone.json` (no such file)",
    ]


def _manifests() -> list[Path]:
    return sorted((ROOT / "bench" / "results").glob("*/manifest.json"))


@pytest.mark.parametrize("manifest", _manifests(), ids=lambda m: m.parent.name)
def test_a_results_manifest_lists_files_that_exist(manifest: Path) -> None:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    for key in ("run", "what", "date", "machine", "commands", "files"):
        assert key in data, f"{manifest}: no {key!r}"
    assert data["run"] == manifest.parent.name
    missing = [f for f in data["files"] if not (manifest.parent / f).is_file()]
    assert missing == []


def test_every_results_run_has_a_manifest() -> None:
    runs = [p for p in (ROOT / "bench" / "results").iterdir() if p.is_dir()]
    assert runs
    assert [p.name for p in runs if not (p / "manifest.json").is_file()] == []


def test_the_decision_index_lists_every_record() -> None:
    folder = ROOT / "docs" / "decisions"
    records = sorted(p.name for p in folder.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records
    index = (folder / "README.md").read_text(encoding="utf-8")
    assert [r for r in records if f"]({r})" not in index] == []
    for r in records:
        head = (folder / r).read_text(encoding="utf-8").splitlines()[0]
        assert head.startswith(f"# {r[:4]}: "), f"{r}: the title names its own number"
