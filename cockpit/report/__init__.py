"""After a run: `cockpit report` (one self-contained HTML page about a session) and `cockpit
export` (one candidate as a standalone file). Reads the session store only; matplotlib is
imported by the charts when a report is drawn, never by importing this package."""

from cockpit.report.data import Report, load_report
from cockpit.report.export import END_OF_HEADER, ExportError, export_candidate
from cockpit.report.html import render_report, write_report

__all__ = [
    "END_OF_HEADER",
    "ExportError",
    "Report",
    "export_candidate",
    "load_report",
    "render_report",
    "write_report",
]
