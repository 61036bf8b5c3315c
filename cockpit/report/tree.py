"""The family tree of the beam as hand-written SVG: every candidate a node, an edge from its
parent, colored by verdict, the best ringed. Hand-written rather than matplotlib so each node
carries a tooltip (`<title>`: id, branch, family, model, verdict, score, the proposer's note).

Layout: generations run left to right (a long session is deep: a scrolling strip reads better
than a tower), each leaf gets a row of its own and a parent sits at the middle of its children.
Trees are ordered by branch, then by when their root was proposed.
"""

from __future__ import annotations

from html import escape

from cockpit.render import fmt_us
from cockpit.report.data import Report
from cockpit.store.models import Candidate

VERDICT_COLORS = {
    "ok": "#2ca02c",
    "wrong": "#d62728",
    "rejected": "#9467bd",
    "load_error": "#ff7f0e",
    "timeout": "#bcbd22",
    "crash": "#222222",
    "duplicate": "#c7c7c7",
    "proposed": "#ffffff",
    "evaluating": "#ffffff",
}
DX = 100  # pixels between generations
DY = 58  # pixels between rows
PAD_X = 170  # room on the left for the branch labels
PAD_Y = 36
R = 9


def _layout(
    cands: list[Candidate], branch_order: list[str]
) -> tuple[dict[str, tuple[int, float]], list[str]]:
    """(depth, row) of every candidate, and the roots in drawing order (by branch, in
    `branch_order`, then by when they were recorded)."""
    ids = {c.id for c in cands}
    children: dict[str, list[str]] = {}
    roots: list[str] = []
    for c in cands:  # candidates arrive in the order they were recorded
        if c.parent in ids and c.parent != c.id:
            children.setdefault(c.parent, []).append(c.id)
        else:
            roots.append(c.id)
    order = {c.id: i for i, c in enumerate(cands)}
    branch_rank: dict[str, int] = {b: i for i, b in enumerate(branch_order)}
    for c in cands:
        branch_rank.setdefault(c.branch or "", len(branch_rank))
    by_id = {c.id: c for c in cands}
    roots.sort(key=lambda r: (branch_rank[by_id[r].branch or ""], order[r]))
    pos: dict[str, tuple[int, float]] = {}
    next_row = 0.0

    seen: set[str] = set()  # nodes already taken into a tree

    def place(root: str) -> None:
        """Iterative post-order (a chain of thousands of candidates must not hit the recursion
        limit); a node is taken once, so parents that go round in a circle (a damaged record)
        still end."""
        nonlocal next_row
        seen.add(root)
        stack: list[tuple[str, int, list[str] | None]] = [(root, 0, None)]
        while stack:
            node, depth, kids = stack.pop()
            if kids is not None:  # its children are placed: center it on them
                rows = [pos[k][1] for k in kids]
                pos[node] = (depth, (min(rows) + max(rows)) / 2)
                continue
            kids = [k for k in children.get(node, []) if k not in seen]
            if not kids:
                pos[node] = (depth, next_row)
                next_row += 1
                continue
            seen.update(kids)
            stack.append((node, depth, kids))
            for k in reversed(kids):
                stack.append((k, depth + 1, None))
        next_row += 0.6  # a gap between trees

    for root in roots:
        place(root)
    for c in cands:  # parents that point in a circle: start from the first of them
        if c.id not in seen:
            roots.append(c.id)
            place(c.id)
    return pos, roots


def tree_svg(report: Report, branch_colors: dict[str, str]) -> str | None:
    cands = report.candidates
    if not cands:
        return None
    pos, roots = _layout(cands, list(branch_colors))
    by_id = {c.id: c for c in cands}
    best = report.best.id if report.best else None
    depth = max(d for d, _ in pos.values())
    rows = max(r for _, r in pos.values()) + 1
    width = int(PAD_X + (depth + 1) * DX + 60)
    height = int(PAD_Y + (rows - 1) * DY + 44)

    def xy(cid: str) -> tuple[float, float]:
        d, r = pos[cid]
        return PAD_X + d * DX, PAD_Y + r * DY

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11" '
        'class="tree">'
    ]
    # edges first, under the nodes: a smooth curve from the parent to the child
    for c in cands:
        if c.parent in pos and c.id in pos and c.parent != c.id:
            (x0, y0), (x1, y1) = xy(c.parent), xy(c.id)
            mx = (x0 + x1) / 2
            color = branch_colors.get(c.branch or "", "#999999")
            out.append(
                f'<path d="M{x0 + R:.1f},{y0:.1f} C{mx:.1f},{y0:.1f} {mx:.1f},{y1:.1f} '
                f'{x1 - R:.1f},{y1:.1f}" fill="none" stroke="{color}" stroke-width="1.6" '
                'stroke-opacity="0.75"/>'
            )
    for root in roots:
        c = by_id[root]
        x, y = xy(root)
        color = branch_colors.get(c.branch or "", "#444444")
        label = f"{c.branch or '?'} · {c.family or '?'}"
        out.append(
            f'<text x="{x - R - 14:.1f}" y="{y + 3.5:.1f}" text-anchor="end" fill="{color}" '
            f'font-weight="bold">{escape(label[:24])}</text>'
        )
    for c in cands:
        x, y = xy(c.id)
        fill = VERDICT_COLORS.get(c.status or "", "#dddddd")
        comparable = (c.summary or {}).get("comparable", True)
        tip = [
            f"{c.id} · branch {c.branch or '?'} · family {c.family or '?'}",
            f"parent {c.parent or '(none: a seed)'} · model {c.model or '(none)'}",
            f"verdict {c.status or '?'} · score {fmt_us(c.score_us)}"
            + ("" if comparable else " (not comparable)"),
        ]
        if report.notes.get(c.id):
            tip.append(f"note: {report.notes[c.id]}")
        if c.id == best:
            tip.append("the best candidate of the session")
        out.append(f'<g class="node"><title>{escape(chr(10).join(tip))}</title>')
        if c.id == best:
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{R + 5}" fill="none" stroke="#e6a700" '
                'stroke-width="3"/>'
            )
        dash = "" if comparable else ' stroke-dasharray="2,2"'
        out.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{R}" fill="{fill}" stroke="#333333" '
            f'stroke-width="1"{dash}/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{y - R - 7:.1f}" text-anchor="middle" fill="#333333">'
            f"{escape(c.id)}</text>"
        )
        if c.status == "ok" and c.score_us:
            weight = ' font-weight="bold"' if c.id == best else ""
            out.append(
                f'<text x="{x:.1f}" y="{y + R + 16:.1f}" text-anchor="middle" '
                f'fill="#555555"{weight}>{escape(fmt_us(c.score_us))}</text>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)
