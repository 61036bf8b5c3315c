"""The prompt: what the agent is told each step, built from the task, the branch and the verifier.

Sections, in the order a reader needs them: the task contract and its public shapes; that
hidden shapes exist, are verified and timed, and which family of sizes they come from (the task's
`hidden_hint`, never the list); the branch's family and current code; its recent attempts with
verdicts; the feedback on the current code; the human's instructions (steered ones every step,
queued ones this step only); an escalation when the branch has stalled; the reply format.
Every text is passed through the hidden-shape scrubber as a last line of defence.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from cockpit.agents.base import Attempt, ProposalRequest
from cockpit.agents.feedback import render_feedback, scrub_hidden
from cockpit.agents.profiles import LLMSettings
from cockpit.agents.replies import ReplyError
from cockpit.harness.task import Task, load_task

MAX_HISTORY = 8
QUOTE_CHARS = 3000  # how much of a failed reply the repair prompt repeats

FORMATS = {
    "file": "Reply with the complete new kernel file in one ```python fenced block, followed by at "
            "most three sentences on what you changed and why. Nothing else.",
    "diff": "Reply with a unified diff against the current code in one ```diff fenced block "
            "(`--- a/kernel.py`, `+++ b/kernel.py`, then @@ hunks whose context and removed lines "
            "copy the current code exactly), followed by at most three sentences on what you changed.",
    "auto": "Reply with either the complete new kernel file in one ```python fenced block, or, for "
            "a small change, a unified diff against the current code in one ```diff block (context "
            "and removed lines copied exactly). Then at most three sentences on what you changed.",
}

ESCALATIONS = {
    "family": "ESCALATION: this branch has stalled in the {family} family. Write a kernel from a "
              "different algorithm family (a different decomposition, tiling or reduction scheme, not "
              "a re-tuning of this one). Name it with a module-level FAMILY = \"...\".",
    "model": "ESCALATION: you are a stronger model consulted because this branch stalled: several "
             "attempts in a row brought no significant improvement. Diagnose what limits the current "
             "kernel (the feedback's profile and roofline lines say where the time goes) and make the change "
             "that removes that limit, even if it is a large one.",
    "prompt": "ESCALATION: small tunings of this kernel no longer help. Make one substantial change "
              "to how the work is organised (fusion, tiling, memory access pattern, parallel "
              "decomposition) rather than adjusting constants.",
}


@functools.lru_cache(maxsize=16)
def _task(root: str) -> Task:
    return load_task(Path(root))


def task_for(req: ProposalRequest) -> Task:
    return _task(str(req.task_root))


def device_class(req: ProposalRequest) -> str:
    dev = str((req.parent_result or {}).get("device") or "cuda")
    return "cpu" if dev == "cpu" else "gpu"


def hidden_labels(task: Task) -> set[str]:
    return {s.describe() for sets in task.shapes.values() for s in sets["hidden"]}


def system_prompt(body: str) -> str:
    """The profile's body; the reply format goes last in the user message, where it is read."""
    return body.strip() or "You are an expert GPU kernel engineer."


def task_contract(task: Task, device: str = "gpu") -> str:
    lines = [f"# Task: {task.name}", task.summary.strip(), "", f"Entry point: {task.signature.strip()}"]
    if task.description.strip():
        lines += ["", task.description.strip()]
    tol = ", ".join(f"{d}: atol {t.atol:g}, rtol {t.rtol:g}" for d, t in task.tolerance.items())
    rules = [f"inputs {', '.join(task.inputs)}; outputs {', '.join(task.outputs)}"]
    if tol:
        rules.append(f"tolerance ({tol}) unless the description says how outputs are checked")
    rules.append("inputs may be modified in place" if task.allow_inplace else "inputs must not be modified")
    if task.contiguous_outputs:
        rules.append("outputs must be contiguous")
    if task.forbidden:
        rules.append(f"forbidden calls: {', '.join(task.forbidden)}")
    rules.append(f"each evaluation must finish within {task.time_limit_s:g} s")
    lines += ["", "Rules: " + "; ".join(rules) + "."]
    public = task.shape_set(device, "public")
    bench = task.shape_set(device, "benchmark")
    hidden = task.shape_set(device, "hidden")
    lines += ["", "Public shapes (verified on every evaluation):"]
    lines += [f"  - {s.describe()}" for s in public]
    if bench:
        lines += ["Benchmark shapes (verified and timed; they count in the score):"]
        lines += [f"  - {s.describe()}" + (f" (weight {s.weight:g})" if s.weight != 1 else "") for s in bench]
    hint = task.hidden_hint.strip() or "sizes unlike the public ones"
    count = f"{len(hidden)} hidden shapes" if hidden else "Hidden shapes"
    lines += ["", f"{count} are held out: you never see them, but every evaluation verifies them with "
                  "fresh random inputs and times them, and they count in the score. They come from "
                  f"this family of sizes: {hint}. Write a kernel that is correct and fast for any "
                  "size in that family, not one tuned to the listed shapes."]
    return "\n".join(lines)


def history_lines(history: list[Attempt]) -> list[str]:
    out = []
    for a in history[-MAX_HISTORY:]:
        score = f", {a.score_us:.4g} us" if isinstance(a.score_us, int | float) else ""
        if a.status == "rejected":
            why = "broke an evaluation rule"
        else:
            why = " ".join(a.summary.split())[:200]
        out.append(f"  - {a.candidate}: {a.status}{score}" + (f" ({why})" if why else ""))
    return out


def user_prompt(req: ProposalRequest, settings: LLMSettings, task: Task) -> str:
    device = device_class(req)
    parts = [task_contract(task, device)]
    fam = [f"# Your branch: {req.branch}, algorithm family: {req.family or 'unnamed'}"]
    if req.escalation != "family":
        fam.append("Improve this kernel within its family; other branches explore other families.")
    if settings.family_hints:
        fam.append("Families worth considering: " + "; ".join(settings.family_hints) + ".")
    fam += ["", f"Current code ({req.parent_id or 'the seed'}):", "```python", req.parent_source.rstrip(), "```"]
    parts.append("\n".join(fam))
    if req.history:
        parts.append("\n".join(["# Recent attempts on this branch (oldest first)", *history_lines(req.history)]))
    parts.append("# Feedback on the current code\n" + render_feedback(req.parent_result, hidden_labels=hidden_labels(task),
                                                                     title="Verdict"))
    last = getattr(req, "last_result", None)  # the latest child's record, once the engine sends it
    if last and last is not req.parent_result:
        parts.append("# Feedback on your last attempt\n" + render_feedback(last, hidden_labels=hidden_labels(task),
                                                                          title="Verdict"))
    if req.steer or req.queued:
        ins = ["# Instructions from the human"]
        ins += [f"  - {s}" for s in req.steer]
        ins += [f"  - (this step only) {q}" for q in req.queued]
        parts.append("\n".join(ins))
    if req.escalation:
        text = ESCALATIONS.get(req.escalation, "ESCALATION: {text}")
        parts.append(text.format(family=req.family or "current", text=req.escalation))
    parts.append("# Reply\n" + FORMATS.get(settings.output_format, FORMATS["auto"]))
    return scrub_hidden("\n\n".join(parts), hidden_labels(task))


def build_messages(req: ProposalRequest, settings: LLMSettings, system: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": system_prompt(system)},
        {"role": "user", "content": user_prompt(req, settings, task_for(req))},
    ]


def repair_messages(messages: list[dict[str, Any]], reply: str, error: ReplyError) -> list[dict[str, Any]]:
    """The conversation so far, the failed reply (shortened) and one request to fix it."""
    shown = reply if len(reply) <= QUOTE_CHARS else reply[:QUOTE_CHARS] + f"\n[… {len(reply) - QUOTE_CHARS:,} more characters cut]"
    ask = (f"Your reply could not be used: {error.line()}\n"
           "Send it again, fixed. " + _repair_hint(error.kind))
    return [*messages, {"role": "assistant", "content": shown or "(empty reply)"}, {"role": "user", "content": ask}]


def _repair_hint(kind: str) -> str:
    return {
        "empty": "Reply with the complete kernel file in a ```python block.",
        "huge": "Reply with only the kernel file (or a diff), no more than needed.",
        "no_code": "Put the complete kernel file in a ```python block.",
        "truncated": "It was cut off: send a shorter complete file, or a ```diff of only the change.",
        "syntax": "Fix the syntax error and send the complete corrected file in a ```python block.",
        "no_kernel": "The file must define kernel(...) with the task's signature; send the complete file.",
        "diff": "The diff did not apply; send the complete new file in a ```python block instead.",
        "duplicate": "Make a real change to the code (not only comments or formatting) and send the complete file.",
    }.get(kind, "Send the complete kernel file in a ```python block.")
