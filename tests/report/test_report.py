"""`cockpit report`: the page of the shipped example session and of recorded sessions with every
kind of mark, read back as a browser would get it (SVG parsed as XML, tables by their cells)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from report_sessions import (
    EXAMPLE,
    MACHINE,
    SHAPES,
    build_cpu_session,
    build_failed_session,
    build_llm_session,
)

from cockpit.report import load_report, render_report
from cockpit.report.tree import _layout
from cockpit.store import SessionRecord
from cockpit.store.models import Candidate

SVG_NS = "{http://www.w3.org/2000/svg}"


class Tables(HTMLParser):
    """Every table of the page as rows of cell texts, keyed by the table's class (or its
    position)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self._in_svg = 0

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            self._in_svg += 1
        if tag == "table":
            self._rows = []
            self.tables.append((dict(attrs).get("class") or "", self._rows))
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "svg":
            self._in_svg -= 1
        if tag in ("td", "th") and self._cell is not None and self._rows:
            self._rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._rows = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables_of(page: str) -> list[tuple[str, list[list[str]]]]:
    parser = Tables()
    parser.feed(page)
    return parser.tables


def svgs_of(page: str) -> list[ET.Element]:
    """Every inline SVG element, parsed as XML (a broken one raises)."""
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", page, flags=re.S)]


def svg_texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()).strip() for t in svg.iter(f"{SVG_NS}text")]


def external_references(page: str) -> list[str]:
    """Anything a browser would fetch: src/href to another document, CSS url() or @import,
    scripts, links, frames. Namespace names (xmlns) are identifiers, not fetches."""
    found = re.findall(
        r"""\b(?:src|href|xlink:href|action|poster)\s*=\s*["']?\s*(?!#)[^"'\s>]+""", page
    )
    found += re.findall(r"url\(\s*['\"]?\s*(?!#)[^)]*\)", page)
    found += re.findall(r"@import|<script|<link|<iframe|<object|<embed|<img", page, flags=re.I)
    return found


@pytest.fixture(scope="module")
def example_page() -> str:
    before = {p.name: p.stat().st_mtime_ns for p in EXAMPLE.iterdir()}
    page = render_report(load_report(EXAMPLE))
    # a report only reads: the shipped example is left as it was (no journal, no WAL beside it)
    assert {p.name: p.stat().st_mtime_ns for p in EXAMPLE.iterdir()} == before
    return page


def test_example_report_header_says_what_ran_and_how_it_ended(example_page):
    facts = dict(
        re.findall(r'<div><span class="k">([^<]+)</span><span>(.*?)</span></div>', example_page)
    )
    assert facts["task"] == "qr"
    assert facts["device"].startswith("cuda") and "NVIDIA_H200" in facts["device"]
    assert facts["agent"] == "tuner"
    assert facts["budget"] == "5 of 20 evaluations"
    assert ">stopped<" in facts["state"]
    assert facts["how it ended"] == "time limit of 5m reached"
    assert facts["started"] == "2026-11-30 23:26:17 UTC"
    assert "No model spend (offline tuner)" in example_page


def test_example_report_svgs_parse_and_name_every_branch_and_family(example_page):
    svgs = svgs_of(example_page)
    assert len(svgs) == 2  # progress and family tree; no spend chart for an offline tuner
    progress, tree = svgs
    texts = svg_texts(progress)
    for name in ("b1", "b2", "b3", "fused-small-n", "triton-panel-wy"):
        assert name in texts, name
    assert "1.1 ms" in texts  # the log axis is labelled in time units
    tree_text = " ".join(svg_texts(tree))
    for cid in ("c0001", "c0002", "c0003", "c0004", "c0005", "c0006", "c0007"):
        assert cid in tree_text
    for label in ("b1 · fused-small-n", "b2 · triton-panel-wy", "b3 · fused-small-n"):
        assert label in tree_text
    # an edge a parent: c0004 and c0007 descend from c0001, c0005 from c0002, c0006 from c0003
    assert len(list(tree.iter(f"{SVG_NS}path"))) == 4
    # the best (c0002, 1.13 ms) is ringed and its tooltip says so
    titles = ["".join(t.itertext()) for t in tree.iter(f"{SVG_NS}title")]
    assert [t.split(" ")[0] for t in titles if "the best candidate" in t] == ["c0002"]
    ids = re.findall(r'\bid="([^"]+)"', example_page)
    assert len(ids) == len(set(ids)), "two inline SVGs share an id"


def test_example_report_has_the_best_candidates_shapes_with_roofline(example_page):
    with sqlite3.connect(f"{EXAMPLE.resolve().as_uri()}/session.db?mode=ro", uri=True) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE kind = 'evaluation_finished' AND candidate = 'c0002'"
        ).fetchone()
    timed = [s for s in json.loads(payload)["shapes"] if s["timing"]]
    assert len(timed) == 41
    [(_, rows)] = [t for t in tables_of(example_page) if t[0] == "shapes"]
    header, body = rows[0], rows[1:]
    assert header[:7] == ["shape", "set", "median", "±SEM", "floor", "roofline", "bound"]
    assert [r[0] for r in body] == [s["shape"] for s in timed]
    first = body[0]
    assert first[1] == "hidden" and first[5] == "57.2%" and first[4] == "3 µs"
    assert "Best candidate per shape (c0002)" in example_page
    assert "No baseline was measured for this task on this machine" in example_page


def test_example_report_references_nothing_outside_the_file(example_page):
    assert external_references(example_page) == []
    assert "http://" not in example_page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', ""
    )
    assert "https://" not in example_page


def test_external_reference_check_catches_fetches():
    """The check above is not vacuous."""
    for bad in (
        '<img src="https://example.org/a.png">',
        '<link rel="stylesheet" href="https://cdn.example.org/x.css">',
        "<style>body { background: url(http://example.org/x.png) }</style>",
        '<svg><image href="//example.org/a.svg"/></svg>',
    ):
        assert external_references(bad), bad


@pytest.fixture(scope="module")
def llm_session(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sessions") / "softmax-llm"
    build_llm_session(folder)
    return folder


def test_marks_are_numbered_on_the_charts_and_listed_in_the_timeline(llm_session):
    page = render_report(load_report(llm_session))
    [(_, rows)] = [t for t in tables_of(page) if any("since start" in c for c in t[1][0])]
    marks = [(r[0], r[3], r[4], r[5]) for r in rows[1:]]
    assert marks == [
        ("1", "plateau", "b3", "plateau after 6 evaluations without a gain"),
        ("2", "escalation", "b3", "escalated (model) to anthropic/model-b"),
        ("3", "human action", "b3", "pause b3 (from tui)"),
        ("4", "human action", "b2", "set-model model=anthropic/model-c b2 (from tui)"),
        ("5", "model switch", "b2", "model of b2: anthropic/model-c"),
        ("6", "human action", "b4", "fork candidate=c0004 b2 (from tui)"),
        ("7", "fork", "b4", "forked from c0004"),
        ("8", "session state", "", "done: budget of 30 spent"),
    ]
    progress = svgs_of(page)[0]
    texts = svg_texts(progress)
    # on the wall-time charts every mark has its number; on the evaluation axes marks 1-7 fall
    # between the same two evaluations, so they are one range there
    for n in range(1, 9):
        assert texts.count(str(n)) >= 2, n
    assert texts.count("1-7") == 2


def test_a_time_that_is_not_comparable_is_shown_but_never_ranked(llm_session):
    report = load_report(llm_session)
    assert report.best is not None and report.best.id == "c0007"  # 19 µs; c0006's 5 µs is not
    page = render_report(report)
    [(_, rows)] = [t for t in tables_of(page) if t[1][0][:2] == ["rank", "id"]]
    rank = {r[1]: r[0] for r in rows[1:]}
    assert rank["c0007"] == "1" and rank["c0004"] == "2" and rank["c0006"] == "not comparable"
    assert rank["c0001"] == "5" and rank["c0005"] == ""  # a baseline ranks; a wrong one not
    assert "Hollow circles: times not comparable" in page
    # the tree draws it dashed
    tree = svgs_of(page)[1]
    dashed = [
        c
        for g in tree.iter(f"{SVG_NS}g")
        for c in g.iter(f"{SVG_NS}circle")
        if c.get("stroke-dasharray") and "c0006" in "".join(g.find(f"{SVG_NS}title").itertext())
    ]
    assert len(dashed) == 1


def test_shapes_against_the_session_baseline_and_a_stored_one(llm_session, tmp_path, monkeypatch):
    data = tmp_path / "data"
    stored = data / "baselines" / "softmax" / f"{MACHINE}.json"
    stored.parent.mkdir(parents=True)
    per_shape = {SHAPES[0]: 76.0, SHAPES[1]: 38.0}  # 4x and 1x the best's 19 and 38 µs
    stored.write_text(
        json.dumps(
            {
                "compile": {"status": "ok", "per_shape": per_shape, "measured": "2027-01-01"},
                "broken": {"status": "wrong", "per_shape": per_shape},
            }
        )
    )
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(data))
    page = render_report(load_report(llm_session))
    [(_, rows)] = [t for t in tables_of(page) if t[0] == "shapes"]
    assert rows[0] == [
        "shape",
        "set",
        "median",
        "±SEM",
        "floor",
        "roofline",
        "bound",
        "baseline",
        "speedup",
        "compile",
        "speedup",
    ]
    body = {r[0]: r for r in rows[1:]}
    assert list(body) == list(SHAPES)
    # the best (c0007, 19 µs) against the baseline seed c0001 (40 µs) evaluated in the session
    assert body[SHAPES[0]][2] == "9.5 µs" and body[SHAPES[0]][7] == "20 µs"
    assert body[SHAPES[0]][8] == "2.11×" and body[SHAPES[0]][10] == "8.00×"
    assert body[SHAPES[1]][10] == "2.00×" and body[SHAPES[2]][9] == "-"
    assert "c0001, evaluated in this session" in page
    assert "stored by `cockpit baseline`, measured 2027-01-01" in page
    assert "broken" not in page


def test_text_from_the_record_is_escaped(llm_session):
    page = render_report(load_report(llm_session))
    assert external_references(page) == []  # no <script> came through
    assert (
        "&lt;script&gt;alert(&quot;an LLM wrote this&quot;)&lt;/script&gt; &amp; &lt;/table&gt;"
        in page
    )
    tree = svgs_of(page)[1]  # the tooltip holds it as text, and the SVG still parses
    assert any("<script>" in "".join(t.itertext()) for t in tree.iter(f"{SVG_NS}title"))


def test_llm_spend_over_time(llm_session):
    page = render_report(load_report(llm_session))
    assert "No model spend" not in page
    facts = dict(re.findall(r'<div><span class="k">([^<]+)</span><span>(.*?)</span></div>', page))
    assert facts["budget"] == "7 of 30 evaluations · LLM cap $5.00"
    assert facts["agent"] == "default" and facts["how it ended"] == "budget of 30 spent"
    assert "$0.3000 and 8,000 tokens over 4 proposals" in page
    svgs = svgs_of(page)
    assert len(svgs) == 3
    spend = svg_texts(svgs[2])
    assert "spend (USD, cumulative)" in spend and "tokens (cumulative)" in spend
    assert {"total", "b2", "b3", "b4"} <= set(spend)
    # two matplotlib SVGs in one page: their ids (clip paths, markers) must not collide
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) > 10 and len(ids) == len(set(ids))
    for ref in re.findall(r'(?:url\(#|href="#)([^)"]+)', page):
        assert ref in ids, ref


def test_a_cpu_session_is_labelled_not_comparable_and_still_ranked_among_itself(tmp_path):
    folder = tmp_path / "softmax-cpu"
    build_cpu_session(folder)
    report = load_report(folder)
    # the baseline's comparable 12 µs is no candidate: the best is the best interpreter time
    assert report.best.id == "c0002"
    page = render_report(report)
    assert "Its times are not comparable" in page  # on the best candidate's card
    assert "Times not comparable" in page  # over the per-shape table
    [(_, rows)] = [t for t in tables_of(page) if t[0] == "shapes"]
    assert rows[0][-2:] == ["baseline", "speedup"]
    assert {r[-1] for r in rows[1:]} == {"not comparable"}  # no speedup across the two kinds
    [(_, rows)] = [t for t in tables_of(page) if t[1][0][:2] == ["rank", "id"]]
    assert {r[1]: r[0] for r in rows[1:]} == {
        "c0003": "1",
        "c0001": "not comparable",
        "c0002": "not comparable",
    }
    assert "b1 (no comparable time)" in svg_texts(svgs_of(page)[0])


def test_a_session_without_any_comparable_time_says_so(tmp_path):
    folder = tmp_path / "softmax-cpu"
    build_cpu_session(folder)
    with SessionRecord.open(folder) as rec:  # drop the baseline's evaluation
        rec.execute("DELETE FROM events WHERE candidate = 'c0003'")
        rec.rebuild()
    report = load_report(folder)
    assert not report.comparable_pool and report.best.id == "c0002"
    page = render_report(report)
    assert "Every time here is not comparable" in page
    assert "every time here is not comparable" in " ".join(svg_texts(svgs_of(page)[0]))


def test_a_session_where_nothing_passed(tmp_path):
    folder = tmp_path / "softmax-failed"
    build_failed_session(folder)
    page = render_report(load_report(folder))
    assert "No candidate passed with a time" in page
    assert len(svgs_of(page)) == 2
    assert external_references(page) == []


def test_importing_and_loading_a_report_draws_nothing(tmp_path):
    """matplotlib is imported when a chart is drawn, never by `cockpit --help`, the CLI module
    or reading a session; nothing here imports torch, Textual or the engine."""
    code = (
        "import sys, cockpit.cli, cockpit.cli.report, cockpit.report\n"
        "cockpit.cli.build_parser()\n"
        f"cockpit.report.load_report({str(EXAMPLE)!r})\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'torch', 'textual')"
        " or m.startswith(('cockpit.engine', 'cockpit.tui', 'cockpit.agents'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_tree_lays_out_a_chain_of_thousands_and_a_cycle():
    def cand(cid: str, parent: str | None) -> Candidate:
        return Candidate(cid, "b1", parent, "f", "ok", 1.0, 1.0, None, None, 0.0, 0.0, {})

    chain = [cand("c0", None)] + [cand(f"c{i}", f"c{i - 1}") for i in range(1, 5000)]
    pos, roots = _layout(chain, ["b1"])
    assert roots == ["c0"] and pos["c4999"] == (4999, 0.0) and pos["c0"] == (0, 0.0)
    # a damaged record whose parents go round in a circle still draws every node once
    pos, roots = _layout([cand("a", "b"), cand("b", "a"), cand("c", None)], ["b1"])
    assert set(pos) == {"a", "b", "c"} and roots[0] == "c"


def test_a_session_with_nothing_recorded_yet(tmp_path):
    from cockpit.store import create_session

    folder = create_session("empty", task="softmax", device="cpu", sessions_dir=tmp_path)
    page = render_report(load_report(folder))
    assert "<svg" not in page and "No evaluation has finished yet" in page
    assert "No candidates yet" in page and "No model spend (offline tuner)" in page
