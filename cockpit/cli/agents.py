"""`cockpit models`: the agent profiles that are configured and which provider keys are present.

Key *names* only, never values. Reading profiles and the environment is all it does: litellm is
not imported (that takes seconds and is not needed to answer).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any


def models_report() -> dict[str, Any]:
    from cockpit.agents.keys import has_key, key_names, present_keys
    from cockpit.agents.profiles import ProfileError, agents_dir, list_profiles

    profiles: list[dict[str, Any]] = []
    for p in list_profiles():
        if isinstance(p, ProfileError):
            profiles.append({"error": str(p)})
            continue
        row: dict[str, Any] = {"name": p.name, "proposer": p.proposer, "path": str(p.path)}
        if p.proposer == "llm":
            s = p.settings()
            models = [s.model, *s.fallbacks]
            row.update(model=s.model, fallbacks=list(s.fallbacks), strategy=s.strategy, api_base=s.api_base,
                       advisor=s.advisor, budget_usd=s.budget_usd, budget_tokens=s.budget_tokens,
                       keys={m: {"needs": list(key_names(m)), "present": has_key(m) or bool(s.api_base)}
                             for m in models})
        profiles.append(row)
    bases = {n: bool(os.environ.get(n)) for n in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_API_BASE",
                                                  "ANTHROPIC_BASE_URL", "OLLAMA_API_BASE")}
    return {"agents_dir": str(agents_dir()), "profiles": profiles, "keys": present_keys(),
            "api_bases": {k: v for k, v in bases.items() if v}}


def cmd_models(args: argparse.Namespace) -> int:
    report = models_report()
    if getattr(args, "json", False):
        print(json.dumps(report, indent=1))
        return 0
    from rich.table import Table

    from cockpit.cli.common import out_console

    con = out_console(highlight=False)
    t = Table(title=f"agent profiles in {report['agents_dir']}", title_justify="left")
    for col in ("profile", "proposer", "model", "fallbacks", "strategy", "keys"):
        t.add_column(col)
    for p in report["profiles"]:
        if "error" in p:
            t.add_row("[red]✗[/red]", "", f"[red]{p['error']}[/red]", "", "", "")
            continue
        if p["proposer"] != "llm":
            t.add_row(p["name"], p["proposer"], "(no model)", "", "", "")
            continue
        missing = sorted({n for m, k in p["keys"].items() if not k["present"] for n in k["needs"][:1]})
        keys = "[green]ok[/green]" if not missing else "[yellow]missing " + ", ".join(missing) + "[/yellow]"
        t.add_row(p["name"], p["proposer"], p["model"] + (f" @ {p['api_base']}" if p.get("api_base") else ""),
                  ", ".join(p["fallbacks"]), p["strategy"], keys)
    con.print(t)
    present = [k for k, v in report["keys"].items() if v]
    con.print("keys present: " + (", ".join(present) if present else "none") + "   (values are never shown)")
    if report["api_bases"]:
        con.print("base URLs set: " + ", ".join(report["api_bases"]))
    return 0


def register_models(sub: Any) -> None:
    s = sub.add_parser("models", help="agent profiles, their models, and which provider keys are present")
    s.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    s.set_defaults(func=cmd_models)
