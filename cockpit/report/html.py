"""`cockpit report`: one self-contained HTML page about a session.

Everything is inline: the style sheet, the charts as SVG elements, no script and no reference
to anything outside the file, so the page opens offline, can be mailed or attached to an issue,
and shows the same thing in ten years. Sections: the header (task, device, agent, budget,
state and how the run ended), the best candidate, progress charts with the numbered timeline
of what happened, the family tree, the best candidate's shapes against the baselines and the
roofline, branches, candidates, and the model spend.
"""

from __future__ import annotations

import time
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

from cockpit.render import fmt_us
from cockpit.report.data import NOT_COMPARABLE, Mark, Report, load_report, model_text
from cockpit.report.plots import (
    MARK_COLORS,
    MARK_NAMES,
    group_colors,
    progress_svg,
    spend_svg,
)
from cockpit.report.tree import VERDICT_COLORS, tree_svg

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
  margin: 0; background: #f5f5f7; }
main { max-width: 1380px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 34px 0 10px; border-bottom: 1px solid #d2d2d7; padding-bottom: 4px; }
.sub { color: #6e6e73; margin-bottom: 16px; }
.card { background: #fff; border-radius: 10px; padding: 14px 18px; margin: 10px 0;
  box-shadow: 0 1px 3px rgba(0,0,0,.08); }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr));
  gap: 6px 24px; }
.facts div { display: flex; gap: 8px; }
.facts .k { min-width: 92px; color: #6e6e73; font-weight: 500; }
.state { display: inline-block; padding: 1px 8px; border-radius: 9px; color: #fff;
  font-weight: 600; }
.s-done { background: #2ca02c; } .s-stopped { background: #1f77b4; }
.s-running, .s-paused { background: #ff7f0e; } .s-crashed { background: #d62728; }
.s-created, .s-unknown { background: #7f7f7f; }
.warn { color: #b35900; }
.muted { color: #6e6e73; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px;
  font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ececf0; text-align: left;
  vertical-align: top; white-space: nowrap; }
td.w { white-space: normal; min-width: 18em; }
.wide { overflow-x: auto; }
th { background: #fafafa; position: sticky; top: 0; font-weight: 600; }
td.n, th.n { text-align: right; white-space: nowrap; }
tr.best td { background: #fff7d6; }
tr.fail td { color: #a1a1a6; }
.verdict { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
  border: 1px solid #333; margin-right: 5px; vertical-align: -1px; }
.bar { display: inline-block; height: 9px; background: #4e79a7; border-radius: 2px;
  vertical-align: 0; margin-right: 6px; }
.faster { color: #1a7f37; font-weight: 600; } .slower { color: #c0392b; }
.scroll { overflow: auto; max-height: 720px; }
.chart svg { max-width: 100%; height: auto; }
.legend span { margin-right: 14px; white-space: nowrap; }
.badge { display: inline-block; min-width: 16px; padding: 0 4px; border-radius: 4px;
  color: #fff; text-align: center; font-size: 11px; }
code { background: #f0f0f3; padding: 1px 4px; border-radius: 3px; }
footer { margin-top: 40px; color: #8e8e93; font-size: 12px; }
"""


def utc(t: float | None) -> str:
    if t is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _pct(value: Any) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.1f}%"


def _verdict(status: str | None) -> str:
    color = VERDICT_COLORS.get(status or "", "#dddddd")
    return f'<span class="verdict" style="background:{color}"></span>{_e(status or "?")}'


def _facts(items: list[tuple[str, str]]) -> str:
    rows = "".join(f'<div><span class="k">{_e(k)}</span><span>{v}</span></div>' for k, v in items)
    return f'<div class="facts">{rows}</div>'


def _header(r: Report) -> str:
    meta = r.meta
    config = meta.get("config") or {}
    evaluated = len(r.evaluations)
    machine = ((r.best_result or {}).get("env") or {}).get("machine")
    device = _e(meta.get("device")) + (
        f" <span class='muted'>({_e(machine)})</span>" if machine else ""
    )
    budget = f"{evaluated} of {_e(meta.get('budget', config.get('budget')))} evaluations"
    caps = []
    usd, tokens = meta.get("budget_usd"), meta.get("budget_tokens")
    if isinstance(usd, int | float):
        caps.append(f"${usd:.2f}")
    if isinstance(tokens, int | float):
        caps.append(f"{tokens:,.0f} tokens")
    if caps:
        budget += " · LLM cap " + " and ".join(caps)
    state = r.state
    ended = _e(meta.get("state_reason")) if state == meta.get("state") else ""
    if state == "crashed" and meta.get("state") != "crashed":
        ended = "the engine is gone while the record says it was " + _e(meta.get("state"))
    if state in ("running", "paused") and r.engine_pid:
        ended = f"still running (engine pid {r.engine_pid}): this report is a snapshot"
    agent = _e(config.get("agent") or "?")
    model = config.get("model") or meta.get("model")
    errors = meta.get("errors")
    items = [
        ("task", _e(meta.get("task"))),
        ("device", device),
        ("agent", agent + (f" · model {_e(model)}" if model else "")),
        ("mode", _e(config.get("mode") or "?") + f" · beam {_e(config.get('beam', '?'))}"),
        ("budget", budget),
        ("state", f'<span class="state s-{_e(state)}">{_e(state)}</span>'),
        ("how it ended", ended or "-"),
        ("host", _e(meta.get("host") or "?")),
        ("started", utc(r.start_t)),
        ("last event", utc(r.end_t)),
        ("duration", duration((r.end_t - r.start_t) if r.start_t and r.end_t else None)),
        ("candidates", f"{len(r.candidates)} ({_status_counts(r)})"),
    ]
    if errors:
        items.append(("engine errors", f"{_e(errors)} · last: {_e(meta.get('last_error'))}"))
    return (
        f"<h1>{_e(r.name)}</h1>"
        f'<div class="sub">Kernel Cockpit session report · task {_e(meta.get("task"))} · '
        f"{utc(meta.get('created'))}</div>"
        f'<div class="card">{_facts(items)}</div>'
    )


def _status_counts(r: Report) -> str:
    counts = Counter(c.status or "?" for c in r.candidates)
    return ", ".join(f"{n} {s}" for s, n in counts.most_common())


def _best(r: Report) -> str:
    if r.best is None:
        return (
            '<h2>Best candidate</h2><div class="card">No candidate passed with a time: '
            "nothing to rank.</div>"
        )
    b, res = r.best, r.best_result or {}
    speedups = res.get("speedups") or {}
    items = [
        ("candidate", f"<b>{_e(b.id)}</b>"),
        ("branch", _e(b.branch)),
        ("family", _e(b.family)),
        ("parent", _e(b.parent or "none (a seed)")),
        ("model", _e(model_text(b.model, r.meta))),
        ("score", f"<b>{fmt_us(b.score_us)}</b>"),
        ("geomean", fmt_us(res.get("geomean_us"))),
        ("hidden geomean", fmt_us(res.get("hidden_geomean_us"))),
        ("roofline", _pct(res.get("roofline_pct"))),
        ("evaluated", utc(b.evaluated_t)),
        ("mode", _e(res.get("mode") or "?")),
    ]
    for name, x in sorted(speedups.items()):
        if isinstance(x, int | float):
            items.append((f"vs {name}", f"{x:.2f}×"))
    if r.notes.get(b.id):
        items.append(("note", _e(r.notes[b.id])))
    label = (
        ""
        if res.get("comparable", True) is not False
        else f'<p class="warn">Its times are {NOT_COMPARABLE}: no candidate has a comparable '
        "one, so it is the best of those.</p>"
    )
    export = f"cockpit export {_e(r.folder)} {_e(b.id)} -o {_e(b.id)}.py"
    return (
        f'<h2>Best candidate</h2><div class="card">{_facts(items)}{label}'
        f'<p class="muted">Its source: <code>{export}</code></p></div>'
    )


def numbered_marks(r: Report) -> list[tuple[int, Mark]]:
    return list(enumerate(r.marks, start=1))


def _timeline(r: Report, marks: list[tuple[int, Mark]]) -> str:
    legend = "".join(
        f'<span><span class="badge" style="background:{MARK_COLORS[k]}">&nbsp;</span> '
        f"{_e(MARK_NAMES[k])}</span>"
        for k in MARK_COLORS
    )
    if not marks:
        return (
            f'<div class="legend muted">{legend}</div>'
            '<p class="muted">No human actions, plateaus, escalations or model switches were '
            "recorded.</p>"
        )
    start = r.start_t or marks[0][1].t
    rows = "".join(
        f'<tr><td class="n"><span class="badge" style="background:{MARK_COLORS.get(m.kind)}">'
        f"{n}</span></td><td>{utc(m.t)}</td><td class='n'>+{duration(m.t - start)}</td>"
        f"<td>{_e(MARK_NAMES.get(m.kind, m.kind))}</td><td>{_e(m.branch or '')}</td>"
        f"<td class='w'>{_e(m.label)}</td></tr>"
        for n, m in marks
    )
    return (
        f'<div class="legend">{legend}</div><div class="scroll" style="max-height:360px">'
        "<table><tr><th class='n'>#</th><th>time</th><th class='n'>since start</th>"
        f"<th>what</th><th>branch</th><th>detail</th></tr>{rows}</table></div>"
    )


def _progress(r: Report, marks: list[tuple[int, Mark]], branch_colors: dict[str, str]) -> str:
    svg = progress_svg(r, marks, branch_colors)
    if svg is None:
        return "<h2>Progress</h2><p class='muted'>No evaluation has finished yet.</p>"
    note = (
        "Lines: the best score so far (log scale; lower is better); dots: every passing "
        "evaluation; × at the bottom: an evaluation that did not pass. Numbers on top: the "
        "timeline below."
    )
    if r.comparable_pool and any(e.scored and not e.comparable for e in r.evaluations):
        note += f" Hollow circles: times {NOT_COMPARABLE}, not ranked with the others."
    elif not r.comparable_pool:
        note = f'<span class="warn">Every time here is {NOT_COMPARABLE}.</span> ' + note
    return (
        f'<h2>Progress</h2><div class="card chart">{svg}<p class="muted">{note}</p>'
        f"{_timeline(r, marks)}</div>"
    )


def _tree(r: Report, branch_colors: dict[str, str]) -> str:
    svg = tree_svg(r, branch_colors)
    if svg is None:
        return "<h2>Family tree</h2><p class='muted'>No candidates yet.</p>"
    legend = "".join(
        f"<span>{_verdict(s)}</span>"
        for s in ("ok", "wrong", "rejected", "load_error", "timeout", "crash", "proposed")
    )
    families = {b.id: b.family for b in r.branches}
    edges = "".join(
        f"<span><b style='color:{color}'>━ {_e(bid)}</b> {_e(families.get(bid) or '')}</span>"
        for bid, color in branch_colors.items()
    )
    return (
        '<h2>Family tree</h2><div class="card">'
        f'<div class="legend">{legend}<span>gold ring: the best · dashed: '
        "not comparable · hover a node for its details</span></div>"
        f'<div class="legend">edges, by the child\'s branch: {edges}</div>'
        f'<div class="scroll">{svg}</div></div>'
    )


def _speedup(base: float | None, mine: float | None, comparable: bool) -> str:
    if not base or not mine:
        return "-"
    if not comparable:
        return '<span class="muted">not comparable</span>'
    x = base / mine
    cls = "faster" if x >= 1 else "slower"
    text = f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"
    return f'<span class="{cls}">{text}×</span>'


def _shapes(r: Report) -> str:
    res = r.best_result
    if not res:
        return ""
    shapes = [s for s in res.get("shapes") or [] if isinstance(s, dict)]
    timed = [s for s in shapes if s.get("timing")]
    counts = Counter(s.get("set") or "?" for s in shapes)
    ok = sum(1 for s in shapes if s.get("ok"))
    summary = (
        f"{len(shapes)} shapes checked ({', '.join(f'{n} {k}' for k, n in counts.items())}), "
        f"{ok} correct; {len(timed)} timed."
    )
    if not r.comparable_pool or res.get("comparable") is False:
        summary += f' <span class="warn">Times {NOT_COMPARABLE}.</span>'
    bases = r.baselines
    mine = res.get("comparable", True) is not False  # a speedup needs two comparable times
    if bases:
        base_note = "Baselines: " + "; ".join(
            f"<b>{_e(b.name)}</b> ({_e(b.origin)})" for b in bases
        )
    else:
        task = r.meta.get("task") or "TASK"
        base_note = (
            "No baseline was measured for this task on this machine: run "
            f"<code>cockpit baseline {_e(task)} --device {_e(r.meta.get('device') or 'cuda')}"
            "</code> there, or put the task's baseline seed in the beam."
        )
    head = (
        "<tr><th>shape</th><th>set</th><th class='n'>median</th><th class='n'>±SEM</th>"
        "<th class='n'>floor</th><th>roofline</th><th>bound</th>"
        + "".join(f"<th class='n'>{_e(b.name)}</th><th class='n'>speedup</th>" for b in bases)
        + "</tr>"
    )
    rows = []
    for s in timed:
        t = s["timing"]
        med = t.get("median_us")
        roof = s.get("roofline_pct")
        bar = (
            f'<span class="bar" style="width:{max(1.0, min(roof, 100.0)) * 0.9:.0f}px"></span>'
            if isinstance(roof, int | float)
            else ""
        )
        cells = "".join(
            f"<td class='n'>{fmt_us(b.per_shape.get(s['shape']))}</td>"
            f"<td class='n'>{_speedup(b.per_shape.get(s['shape']), med, b.comparable == mine)}"
            "</td>"
            for b in bases
        )
        sem = t.get("sem_pct")
        rows.append(
            f"<tr{'' if s.get('ok') else ' class=fail'}><td>{_e(s.get('shape'))}</td>"
            f"<td>{_e(s.get('set'))}</td><td class='n'>{fmt_us(med)}</td>"
            f"<td class='n'>{'-' if sem is None else f'{sem:.2f}%'}</td>"
            f"<td class='n'>{fmt_us(s.get('floor_us'))}</td>"
            f"<td>{bar}{_pct(roof)}</td><td>{_e(s.get('bound') or '')}</td>{cells}</tr>"
        )
    table = (
        f'<div class="scroll"><table class="shapes">{head}{"".join(rows)}</table></div>'
        if rows
        else "<p class='muted'>No shape was timed.</p>"
    )
    return (
        f"<h2>Best candidate per shape ({_e(r.best.id if r.best else '?')})</h2>"
        f'<div class="card"><p>{summary} Roofline: the time the machine needs at its peak '
        f"bandwidth or compute (the floor) as a share of the candidate's time.</p>"
        f"<p>{base_note}</p>{table}</div>"
    )


def _branches(r: Report, branch_colors: dict[str, str]) -> str:
    rows = []
    for b in r.branches:
        info = b.info or {}
        color = branch_colors.get(b.id, "#444")
        rows.append(
            f"<tr><td><b style='color:{color}'>{_e(b.id)}</b></td><td>{_e(b.family)}</td>"
            f"<td>{_e(b.state)}</td><td>{_e(b.model or '-')}</td>"
            f"<td class='n'>{fmt_us(b.best_us)}</td><td>{_e(b.best_candidate or '-')}</td>"
            f"<td class='n'>{info.get('plateaus', 0)}</td>"
            f"<td class='n'>{info.get('escalations', 0)}</td>"
            f"<td>{_e(info.get('forked_from') or '')}</td>"
            f"<td class='w'>{_e(info.get('state_reason') or '')}</td></tr>"
        )
    return (
        '<h2>Branches</h2><div class="card"><div class="wide"><table><tr><th>branch</th>'
        "<th>family</th>"
        "<th>state</th><th>model</th><th class='n'>best</th><th>best candidate</th>"
        "<th class='n'>plateaus</th><th class='n'>escalations</th><th>forked from</th>"
        f"<th>reason</th></tr>{''.join(rows)}</table></div></div>"
    )


def _candidates(r: Report) -> str:
    ranked = sorted(
        (c for c in r.candidates if c.status == "ok" and c.score_us),
        key=lambda c: c.score_us or 0.0,
    )
    ranks = {}
    for c in ranked:
        comparable = (c.summary or {}).get("comparable", True) is not False
        if comparable == r.comparable_pool:
            ranks[c.id] = len(ranks) + 1
    rows = []
    for c in r.candidates:
        s = c.summary or {}
        comparable = s.get("comparable", True) is not False
        rank = ranks.get(c.id)
        rank_cell = (
            str(rank) if rank else ("not comparable" if c.status == "ok" and c.score_us else "")
        )
        reasons = "; ".join(
            f"{x.get('kind', '')}: {x.get('message', '')}" for x in s.get("reasons") or []
        )
        cls = " class=best" if r.best and c.id == r.best.id else ""
        if not cls and c.status not in ("ok", None):
            cls = " class=fail"
        rows.append(
            f"<tr{cls}><td class='n'>{rank_cell}</td><td>{_e(c.id)}</td><td>{_e(c.branch)}</td>"
            f"<td>{_e(c.family)}</td><td>{_e(c.parent or '')}</td><td>{_e(c.model or '')}</td>"
            f"<td>{_verdict(c.status)}</td><td class='n'>{fmt_us(c.score_us)}"
            f"{'' if comparable else ' *'}</td>"
            f"<td class='n'>{fmt_us(c.geomean_us)}</td>"
            f"<td class='n'>{fmt_us(s.get('hidden_geomean_us'))}</td>"
            f"<td class='n'>{_pct(s.get('roofline_pct'))}</td><td>{utc(c.evaluated_t)}</td>"
            f"<td class='w'>{_e(r.notes.get(c.id, ''))}{'<br>' if reasons else ''}"
            f"<span class='muted'>{_e(reasons[:400])}</span></td></tr>"
        )
    star = (
        f'<p class="muted">* time {NOT_COMPARABLE}.</p>'
        if any((c.summary or {}).get("comparable") is False for c in r.candidates)
        else ""
    )
    return (
        '<h2>Candidates</h2><div class="card"><div class="scroll"><table><tr>'
        "<th class='n'>rank</th><th>id</th><th>branch</th><th>family</th><th>parent</th>"
        "<th>model</th><th>verdict</th><th class='n'>score</th><th class='n'>geomean</th>"
        "<th class='n'>hidden</th><th class='n'>roofline</th><th>evaluated</th>"
        f"<th>note · reasons</th></tr>{''.join(rows)}</table></div>{star}</div>"
    )


def _spend(r: Report, branch_colors: dict[str, str]) -> str:
    svg = spend_svg(r, branch_colors)
    if svg is None:
        return '<h2>LLM spend</h2><div class="card">No model spend (offline tuner).</div>'
    usd = sum(p.usd for p in r.spend)
    tokens = sum(p.tokens for p in r.spend)
    by_model: dict[str, tuple[float, int]] = {}
    for p in r.spend:
        u, t = by_model.get(p.model or "?", (0.0, 0))
        by_model[p.model or "?"] = (u + p.usd, t + p.tokens)
    models = "; ".join(f"{_e(m)} ${u:.4f}, {t:,} tokens" for m, (u, t) in by_model.items())
    no_cost = "" if usd else " (no cost reported: a local or free model)"
    return (
        f'<h2>LLM spend</h2><div class="card chart"><p>${usd:.4f} and {tokens:,} tokens over '
        f"{len(r.spend)} proposals{no_cost}. By model: {models}.</p>{svg}</div>"
    )


def render_report(report: Report) -> str:
    branch_ids = [b.id for b in report.branches] + [e.branch or "?" for e in report.evaluations]
    branch_colors = group_colors(branch_ids)
    marks = numbered_marks(report)
    body = "".join(
        [
            _header(report),
            _best(report),
            _progress(report, marks, branch_colors),
            _tree(report, branch_colors),
            _shapes(report),
            _branches(report, branch_colors),
            _candidates(report),
            _spend(report, branch_colors),
        ]
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(report.name)} · Kernel Cockpit report</title>"
        f"<style>{CSS}</style></head><body><main>{body}"
        f"<footer>Written by <code>cockpit report</code> at {utc(time.time())} from "
        f"{_e(report.folder)}. A self-contained page: it needs no network.</footer>"
        "</main></body></html>\n"
    )


def write_report(folder: str | Path, out: str | Path) -> Path:
    """Render the session in `folder` to the HTML file `out`; returns its path."""
    page = render_report(load_report(folder))
    out = Path(out)
    out.write_text(page, encoding="utf-8")
    return out
