"""`cockpit models`: profiles and their models, key names present, never key values; and the
agent modules never import litellm on their own."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from agents_helpers import ANTHROPIC_KEY, OPENAI_KEY, ROOT

from cockpit.cli.agents import cmd_models, register_models


def run_models(capsys, as_json: bool) -> str:
    parser = argparse.ArgumentParser()
    register_models(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["models", *(["--json"] if as_json else [])])
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_models_lists_profiles_and_key_names_without_values(capsys, keys, monkeypatch, write_profile, tmp_path):
    write_profile("local", proposer="llm", model="openai/qwen-coder", api_base="http://127.0.0.1:9/v1")
    write_profile("hosted", proposer="llm", model="anthropic/claude-haiku-4-5", fallbacks=["mistral/codestral"])
    (tmp_path / "broken.md").write_text("---\nmodel: openai/x\ntemperature: hot\n---\n")
    monkeypatch.setenv("COCKPIT_AGENTS_DIR", str(tmp_path))
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    report = json.loads(run_models(capsys, as_json=True))
    rows = {p.get("name"): p for p in report["profiles"]}
    assert rows["hosted"]["model"] == "anthropic/claude-haiku-4-5" and rows["hosted"]["fallbacks"] == ["mistral/codestral"]
    assert rows["hosted"]["keys"]["mistral/codestral"] == {"needs": ["MISTRAL_API_KEY"], "present": False}
    assert rows["local"]["keys"]["openai/qwen-coder"]["present"]
    assert any("broken.md" in p.get("error", "") and "'temperature'" in p["error"] for p in report["profiles"])
    assert report["keys"]["OPENAI_API_KEY"] and report["keys"]["ANTHROPIC_API_KEY"]
    assert not report["keys"]["MISTRAL_API_KEY"]
    table = run_models(capsys, as_json=False)
    assert "hosted" in table and "missing MISTRAL_API_KEY" in table and "OPENAI_API_KEY" in table
    for out in (json.dumps(report), table):
        assert OPENAI_KEY not in out and ANTHROPIC_KEY not in out


def test_cmd_models_is_callable_directly(capsys):
    assert cmd_models(argparse.Namespace(json=True)) == 0
    assert "default" in {p.get("name") for p in json.loads(capsys.readouterr().out)["profiles"]}


def test_agent_modules_do_not_import_litellm():
    code = ("import sys, cockpit.agents.llm, cockpit.agents.prompt, cockpit.agents.replies, cockpit.agents.costs, "
            "cockpit.agents.profiles, cockpit.agents.feedback, cockpit.agents.keys, cockpit.cli.agents\n"
            "from cockpit.agents.profiles import load_profile, make_proposer\n"
            "make_proposer(load_profile('default'))\n"
            "assert 'litellm' not in sys.modules, 'litellm imported'\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-500:]
