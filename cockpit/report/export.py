"""`cockpit export`: one candidate of a session as a standalone file.

The file is a header of comment lines (where the candidate came from and its verdict) and then
the candidate's source, byte for byte: comments are invisible to the harness's static scan, so
the exported file is judged exactly as the candidate was (`cockpit eval TASK FILE.py`), except
a task's baseline seed, which the harness exempts from the forbidden-call rules only as the
byte-identical file the task lists. The header ends with `END_OF_HEADER`, so a tool can split
the two again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cockpit.render import fmt_us
from cockpit.report.data import model_text, pick_best, read_evaluations
from cockpit.store import SessionRecord
from cockpit.store import events as ev
from cockpit.store.models import Candidate

END_OF_HEADER = (
    "# --- end of the `cockpit export` header: the candidate's source follows unchanged ---\n"
)
MAX_SHAPE_LINES = 60


class ExportError(Exception):
    """The session has no such candidate, or no source for it: one line for the user."""


def _source(folder: Path, rec: SessionRecord, c: Candidate) -> str | None:
    """The proposal's recorded source, else the candidate repository's commit (the same
    lookup the cockpit's candidate view makes)."""
    found = rec.events(kinds=[ev.CANDIDATE_PROPOSED], candidate=c.id)
    text = found[-1].payload.get("source") if found else None
    if isinstance(text, str):
        return text
    if not c.commit_sha:
        return None
    from cockpit.store import CandidateRepo  # gitpython only when the record lacks the source

    try:
        with CandidateRepo(folder / "repo", create=False) as repo:
            return repo.read_source(c.commit_sha)
    except Exception:  # noqa: BLE001 - a missing repository or object is "no source"
        return None


def _comment(text: str) -> str:
    """Text as comment lines (a reason or note may hold newlines)."""
    return "".join(f"# {line}".rstrip() + "\n" for line in str(text).splitlines() or [""])


def _shape_lines(result: dict[str, Any]) -> list[str]:
    shapes = [s for s in result.get("shapes") or [] if isinstance(s, dict)]
    if not shapes:
        return []
    ok = sum(1 for s in shapes if s.get("ok"))
    sets: dict[str, int] = {}
    for s in shapes:
        sets[s.get("set") or "?"] = sets.get(s.get("set") or "?", 0) + 1
    timed = [s for s in shapes if s.get("timing")]
    lines = [
        f"shapes: {len(shapes)} checked ({', '.join(f'{n} {k}' for k, n in sets.items())}), "
        f"{ok} correct, {len(timed)} timed"
    ]
    shown = [s for s in shapes if not s.get("ok")] + timed
    for s in shown[:MAX_SHAPE_LINES]:
        t = s.get("timing") or {}
        if not s.get("ok"):
            msg = (s.get("error") or {}).get("message") if isinstance(s.get("error"), dict) else ""
            lines.append(f"  FAILED {s.get('shape')} [{s.get('set')}]: {msg or 'wrong'}")
            continue
        roof = s.get("roofline_pct")
        roof_text = f", {roof:.1f}% of the roofline" if isinstance(roof, int | float) else ""
        floor = f" (floor {fmt_us(s['floor_us'])}{roof_text})" if s.get("floor_us") else ""
        lines.append(f"  {s.get('shape')} [{s.get('set')}]: {fmt_us(t.get('median_us'))}{floor}")
    if len(shown) > MAX_SHAPE_LINES:
        lines.append(f"  ... and {len(shown) - MAX_SHAPE_LINES} more")
    return lines


def header(meta: dict[str, Any], c: Candidate, result: dict[str, Any] | None, note: str) -> str:
    result = result or {}
    machine = (result.get("env") or {}).get("machine")
    lines = [
        f"Exported by `cockpit export` at {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
        f"session:   {meta.get('name')} (task {meta.get('task')}, device {meta.get('device')}"
        + (f", {machine})" if machine else ")"),
        f"candidate: {c.id}",
        f"branch:    {c.branch or '-'}",
        f"family:    {c.family or '-'}",
        f"parent:    {c.parent or 'none (a seed)'}",
        f"model:     {model_text(c.model, meta)}",
    ]
    if c.commit_sha:
        lines.append(f"commit:    {c.commit_sha} (in the session's repo/)")
    if note:
        lines.append(f"note:      {note}")
    if not result:
        lines.append(f"verdict:   {c.status or 'not evaluated'}")
    else:
        verdict = (
            f"verdict:   {result.get('status')}, score {fmt_us(result.get('score_us'))}"
            f" (geomean {fmt_us(result.get('geomean_us'))}, hidden geomean "
            f"{fmt_us(result.get('hidden_geomean_us'))}"
        )
        roof = result.get("roofline_pct")
        if isinstance(roof, int | float):
            verdict += f", roofline {roof:.1f}%"
        lines.append(verdict + f", mode {result.get('mode') or '?'})")
        if c.evaluated_t:
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(c.evaluated_t))
            lines.append(f"evaluated: {when}")
        if result.get("comparable") is False:
            lines.append("times:     not comparable (Triton interpreter on a CPU)")
        for name, x in sorted((result.get("speedups") or {}).items()):
            if isinstance(x, int | float):
                lines.append(f"speedup:   {x:.2f}x against {name}")
        for r in (result.get("reasons") or [])[:5]:
            if isinstance(r, dict):
                lines.append(f"reason:    {r.get('kind', '')}: {r.get('message', '')}")
        lines += _shape_lines(result)
    return "".join(_comment(line) for line in lines) + END_OF_HEADER


def export_candidate(folder: str | Path, candidate_id: str | None) -> tuple[Candidate, str]:
    """(the candidate, the exported file's text). `candidate_id` None means the best."""
    folder = Path(folder)
    with SessionRecord.open_readonly(folder) as rec, rec.snapshot():
        meta = rec.meta()
        if candidate_id is None:
            best = pick_best(read_evaluations(rec), rec.branches())
            c = rec.candidate(best) if best else None
            if c is None:
                raise ExportError(
                    f"{folder.name}: no candidate passed (baselines aside), so there is no best"
                )
        else:
            c = rec.candidate(candidate_id)
            if c is None:
                raise ExportError(f"{folder.name}: no candidate {candidate_id!r}")
        source = _source(folder, rec, c)
        if source is None:
            raise ExportError(f"{folder.name}: no source recorded for {c.id}")
        found = rec.events(kinds=[ev.EVALUATION_FINISHED], candidate=c.id)
        result = found[-1].payload if found else None
        proposed = rec.events(kinds=[ev.CANDIDATE_PROPOSED], candidate=c.id)
        note = (proposed[-1].payload.get("note") or "") if proposed else ""
    meta.setdefault("name", folder.name)
    return c, header(meta, c, result, str(note)) + source
