"""The vocabulary of the session record: every event kind and the payload fields it carries.

One fact, one event. The engine appends them; every view (live TUI, attach, replay, reports,
crash recovery) reads them. `apply_event` (derive.py) turns them into the `candidates`,
`branches` and `session` tables, so the fields below are a contract: a field that a derived
table reads is marked (*). Extra fields are allowed and kept in the payload; missing optional
fields are treated as unknown, never as an error, so old sessions stay readable.

Columns outside the payload: `branch` (branch id) and `candidate` (candidate id) are the event's
subject, set by `append(kind, payload, branch=..., candidate=...)`.

Session
  session_created     name*, task*, device*, created*, config            (subject: none)
  session_started     pid*, host*, resumed*, argv, plus any meta to set  (subject: none)
  session_state       state* (running|paused|stopped|done|crashed), reason*
  budget_changed      budget*, previous, usd, tokens, previous_usd, previous_tokens (LLM caps:
                      present when set; null = no cap)
  model_changed       model*, previous        (branch subject = one branch; none = all + default)
  error               message*, where, traceback
  note                text

Beam
  branch_created      family*, model*, parent_candidate*, instruction*   (subject: the new branch)
  branch_forked       from_branch*, from_candidate*, family*, model*, instruction*
                      (subject: the new branch; creates it, so no branch_created is needed)
  branch_state        state* (running|paused|retired|plateau), reason*
  plateau_detected    evaluations_since_best*, best_us, window
  escalated           mode* (model|family|prompt), model*, family*, instruction, reason
  best_changed        candidate*, score_us*, previous_us, previous_candidate  (subject: branch)

Candidates (subject: branch and candidate)
  proposal_requested  parent, model, instructions (queued ones this request carries)
                      Every request gets exactly one outcome: candidate_proposed (with
                      `request` = the request's event id), proposal_failed or proposal_cancelled.
  proposal_failed     reason*, model, request, usage
  proposal_cancelled  reason, model, request     (a pause/retire/stop/redirect while in flight; or
                      the engine stopped during the call, recorded on resume)
  proposal_discarded  reason, request, usage     (a reply that came back after its request was
                      cancelled: not used; its usage is kept so costs and budget caps count it)
  candidate_proposed  parent*, family*, model*, source_hash*, filename, source, note, usage,
                      duplicate_of, request, group (best-of-n: the request id shared by the
                      step's choices), choice, choices
  evaluation_started  worker, device
  evaluation_finished the harness's full result record (Result.to_dict()): status*, reasons*,
                      geomean_us*, score_us*, hidden_geomean_us*, speedups*, roofline_pct*,
                      comparable*, wall_s*, shapes, profile, ...; engine extras under "engine"
  candidate_committed commit_sha*

Commands (subject: the branch the command targets, if any)
  command_received    command_id, kind, args, source
  command_acked       command_id*, ok*, message*, kind
"""

from __future__ import annotations

SESSION_CREATED = "session_created"
SESSION_STARTED = "session_started"
SESSION_STATE = "session_state"
BUDGET_CHANGED = "budget_changed"
MODEL_CHANGED = "model_changed"
ERROR = "error"
NOTE = "note"

BRANCH_CREATED = "branch_created"
BRANCH_FORKED = "branch_forked"
BRANCH_STATE = "branch_state"
PLATEAU_DETECTED = "plateau_detected"
ESCALATED = "escalated"
BEST_CHANGED = "best_changed"

PROPOSAL_REQUESTED = "proposal_requested"
PROPOSAL_FAILED = "proposal_failed"
PROPOSAL_CANCELLED = "proposal_cancelled"
PROPOSAL_DISCARDED = "proposal_discarded"
CANDIDATE_PROPOSED = "candidate_proposed"
EVALUATION_STARTED = "evaluation_started"
EVALUATION_FINISHED = "evaluation_finished"
CANDIDATE_COMMITTED = "candidate_committed"

COMMAND_RECEIVED = "command_received"
COMMAND_ACKED = "command_acked"

# kind -> payload fields (documentation you can assert on; see the module docstring).
FIELDS: dict[str, tuple[str, ...]] = {
    SESSION_CREATED: ("name", "task", "device", "created", "config"),
    SESSION_STARTED: ("pid", "host", "resumed", "argv"),
    SESSION_STATE: ("state", "reason"),
    BUDGET_CHANGED: ("budget", "previous"),
    MODEL_CHANGED: ("model", "previous"),
    ERROR: ("message", "where", "traceback"),
    NOTE: ("text",),
    BRANCH_CREATED: ("family", "model", "parent_candidate", "instruction"),
    BRANCH_FORKED: ("from_branch", "from_candidate", "family", "model", "instruction"),
    BRANCH_STATE: ("state", "reason"),
    PLATEAU_DETECTED: ("evaluations_since_best", "best_us", "window"),
    ESCALATED: ("mode", "model", "family", "instruction", "reason"),
    BEST_CHANGED: ("candidate", "score_us", "previous_us", "previous_candidate"),
    PROPOSAL_REQUESTED: ("parent", "model"),
    PROPOSAL_FAILED: ("reason", "model"),
    PROPOSAL_CANCELLED: ("reason", "model", "request"),
    PROPOSAL_DISCARDED: ("reason", "request", "usage"),
    CANDIDATE_PROPOSED: ("parent", "family", "model", "source_hash", "filename"),
    EVALUATION_STARTED: ("worker", "device"),
    EVALUATION_FINISHED: ("status", "reasons", "geomean_us", "score_us", "shapes"),
    CANDIDATE_COMMITTED: ("commit_sha",),
    COMMAND_RECEIVED: ("command_id", "kind", "args", "source"),
    COMMAND_ACKED: ("command_id", "ok", "message", "kind"),
}
KINDS: frozenset[str] = frozenset(FIELDS)

SESSION_STATES = ("created", "running", "paused", "stopped", "done", "crashed")
BRANCH_STATES = ("running", "paused", "retired", "plateau")
# Candidate statuses: the harness's six verdicts plus the two states before a verdict exists.
CANDIDATE_PENDING = ("proposed", "evaluating")
