"""`MainScreen`: GPU, benchmark history and beam side by side; candidate detail and event log
below. Reads through the injected `SessionSource` in worker threads, writes only commands."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.notifications import Notification, Notify
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input
from textual.worker import Worker, WorkerState

from cockpit.store.states import ENDED_STATES
from cockpit.tui.commands import PaletteEntry
from cockpit.tui.describe import command_target
from cockpit.tui.filter import NO_FILTER, Filter
from cockpit.tui.keymap import NotifySettings
from cockpit.tui.messages import CommandPosted, DetailLoaded, SnapshotLoaded, SummaryReady
from cockpit.tui.model import SessionModel
from cockpit.tui.notify import Notice, notice_env, notices, run_notify_command
from cockpit.tui.screens.confirm import ConfirmDialog
from cockpit.tui.screens.detail import DetailScreen
from cockpit.tui.screens.fork import ForkDialog
from cockpit.tui.screens.help import HelpScreen
from cockpit.tui.screens.redirect import RedirectDialog
from cockpit.tui.screens.retire import RetireDialog
from cockpit.tui.screens.set_model import ModelDialog
from cockpit.tui.screens.since_last import SinceLastLookedScreen
from cockpit.tui.sources import SessionSource
from cockpit.tui.summary import (
    SUMMARY_KINDS,
    LastLooked,
    read_last_looked,
    summarize,
    summary_lines,
    write_last_looked,
)
from cockpit.tui.widgets.beam_panel import BeamPanel
from cockpit.tui.widgets.candidate_detail import CandidateDetail
from cockpit.tui.widgets.event_log import EventLog
from cockpit.tui.widgets.gpu_panel import GpuPanel
from cockpit.tui.widgets.history_plot import (
    HistoryData,
    HistoryPlot,
    quantize_end,
    reference_line,
)
from cockpit.tui.widgets.session_bar import SessionBar, bar_content

STEERING = {"toggle_branch", "toggle_all", "fork", "redirect", "retire", "set_model", "stop_engine"}
NEEDS_BRANCH = {"toggle_branch", "redirect", "retire"}
REPLAY = {
    "play",
    "step",
    "step_back",
    "slower",
    "faster",
    "to_start",
    "to_end",
    "next_milestone",
    "quit_replay",
}
REPLAY_TICK_S = 0.1
PLOT_EDGE_S = 5.0  # how often time passing alone redraws a live plot (`_draw_history`)


class MainScreen(Screen[None]):
    CSS_PATH = "main.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-medium"), (160, "-wide")]
    # Help and quitting first: a narrow footer cuts its end, and these two must stay in sight.
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="cockpit.help", key_display="?"),
        Binding("q", "detach", "Detach", id="cockpit.detach"),
        Binding("q", "quit_replay", "Quit", id="replay.quit"),
        Binding("space", "toggle_branch", "Pause/resume", id="cockpit.toggle_branch"),
        Binding("P", "toggle_all", "Pause all", id="cockpit.toggle_all", key_display="P"),
        Binding("f", "fork", "Fork", id="cockpit.fork"),
        Binding("r", "redirect", "Redirect", id="cockpit.redirect"),
        Binding("x", "retire", "Retire", id="cockpit.retire"),
        Binding("m", "set_model", "Model", id="cockpit.set_model"),
        Binding("enter", "details", "Details", id="cockpit.details", priority=True),
        Binding("d", "diff", "Diff", id="cockpit.diff"),
        Binding("slash", "filter", "Filter", id="cockpit.filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", id="cockpit.clear_filter"),
        Binding("tab", "app.focus_next", "Next panel", id="cockpit.next_panel", show=False),
        Binding("ctrl+r", "refresh", "Refresh now", id="cockpit.refresh", show=False),
        Binding("space", "play", "Play/pause", id="replay.play"),
        Binding(
            "left_square_bracket", "step_back", "Step back", id="replay.step_back", key_display="["
        ),
        Binding("right_square_bracket", "step", "Step", id="replay.step", key_display="]"),
        Binding("less_than_sign", "slower", "Slower", id="replay.slower", key_display="<"),
        Binding("greater_than_sign", "faster", "Faster", id="replay.faster", key_display=">"),
        Binding("g", "to_start", "Start", id="replay.start"),
        Binding("G", "to_end", "End", id="replay.end", key_display="G"),
        Binding("n", "next_milestone", "Next best/action", id="replay.next"),
    ]
    PALETTE_ONLY = (
        PaletteEntry(
            "Stop the engine…", "stop_engine", "asks for confirmation; the session can be resumed"
        ),
    )

    selection: reactive[tuple[str | None, str | None]] = reactive((None, None), init=False)

    def __init__(
        self,
        source: SessionSource,
        *,
        now: Callable[[], float] = time.time,
        poll_interval: float | None = 1.0,
        show_summary: bool = True,
        command_source: str = "tui",
        user: str | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.now = now
        self.poll_interval = poll_interval
        self.show_summary = show_summary and source.can_command
        self.command_source = command_source
        self.user = user
        self.model = SessionModel()
        self.loaded = False
        self._polling = False
        self._mine: set[int] = set()
        # the "waiting for the engine" toast of each command sent from here, until its answer
        self._waiting: dict[int, Notification] = {}
        self._said_crash = False
        # snapshots that arrived while another screen (a dialog, the details) covered this one:
        # drawn when it is on top again. Drawing under a dialog repaints the whole terminal
        # (the dialog's backdrop is translucent), which costs more than the screen itself
        # (decision 0038)
        self._covered: list = []  # (reset, events) of each snapshot not drawn yet
        self._covered_snap = None  # the latest of them: the panels' whole state
        self._detail_open: str | None = None
        self._tick_t = time.monotonic()
        self.filter = NO_FILTER
        self._keys_shown: tuple[bool | None, ...] = ()  # `_availability` at the last refresh
        self._bar_shown: tuple = ()  # the session bar's text and styles as drawn
        self._plot_t = 0.0  # monotonic time the plot's data was last replaced

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # kept at hand: each snapshot draws into them (a query walks the DOM)
        self._bar, self._gpu = SessionBar(id="bar"), GpuPanel(id="gpu")
        self._plot, self._beam = HistoryPlot(id="history"), BeamPanel(id="beam")
        self._log = EventLog(id="log")
        yield self._bar
        with Horizontal(id="top"):
            yield self._gpu
            yield self._plot
            yield self._beam
        with Horizontal(id="bottom"):
            yield CandidateDetail(id="detail")
            yield self._log
        yield Input(
            placeholder="filter: family:X state:paused verdict:wrong branch:b2 model:X or any text"
            " · enter keep · escape clear",
            id="filter",
        )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(BeamPanel).option_list.focus()
        self._load()
        if self.poll_interval and self.source.player is None:
            self.set_interval(self.poll_interval, self.action_refresh)
        if self.poll_interval and self.source.player is not None:
            self.set_interval(REPLAY_TICK_S, self._tick)

    # --- reading ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self) -> None:
        self.post_message(SnapshotLoaded(self.source.load()))

    def action_refresh(self) -> None:
        if not self._polling and self.loaded:
            self._polling = True
            self._poll()

    @work(thread=True, group="poll", exit_on_error=False)
    def _poll(self) -> None:
        try:
            snap = self.source.poll()
        finally:
            self._polling = False
        if snap is not None:
            self.post_message(SnapshotLoaded(snap))

    @on(SnapshotLoaded)
    def _apply(self, message: SnapshotLoaded) -> None:
        snap = message.snapshot
        first = not self.loaded
        self.loaded = True
        acked = self.model.apply(snap)
        if snap.reset:  # a reset replaces the log: what came before it need not be drawn
            self._covered.clear()
        self._covered.append((snap.reset, snap.events))
        self._covered_snap = snap
        if first or self.is_active:
            self._draw_covered()
        for c in acked:
            ok = c.state == "acked"
            what = command_target(c.kind, c.args)
            waiting = self._waiting.pop(c.id, None)
            if waiting is not None and waiting in self.app._notifications:
                self.app._unnotify(waiting)  # the answer replaces "waiting for the engine"
            self.notify(
                f"{'✓' if ok else '✗'} {what}: {c.ack_message or c.state}",
                title="engine acknowledged" if ok else "engine refused",
                severity="information" if ok else "error",
                markup=False,  # the engine's words: `[` in them is text, not a style
            )
        if self.source.can_command and not snap.reset:
            self._announce(snap)
        if first and self.show_summary:
            self._summarize()
        # The footer is rebuilt (every key widget recomposed) on each `refresh_bindings`: only
        # when a key's availability changed, which a snapshot rarely does (a new candidate, a
        # verdict, telemetry leave the keys as they were).
        if first or self._availability() != self._keys_shown:
            self.refresh_bindings()

    def _availability(self) -> tuple[bool | None, ...]:
        """What `check_action` says of each of this screen's actions: the footer's content."""
        return tuple(self.check_action(action, ()) for action in ACTIONS)

    def refresh_bindings(self) -> None:
        try:
            self._keys_shown = self._availability()
        except NoMatches:  # being taken down: no footer to compare with
            self._keys_shown = ()
        super().refresh_bindings()

    def _draw_covered(self) -> None:
        """Draw the snapshots applied since the last draw: the log gets every one's events, the
        panels only the latest (each snapshot holds their whole state). Each panel compares
        what it would show with what it shows and repaints only on a difference: a poll comes
        every second (telemetry at least), and every repaint is composited and written to the
        terminal, a layout change (a Static's update, rows added) lays out the whole screen."""
        snap, self._covered_snap = self._covered_snap, None
        parts, self._covered = self._covered, []
        if snap is None:
            return
        live = self.model.engine_active and self.source.player is None
        self._beam.show(
            snap.branches, snap.candidates, self.model.spend, live, self.model.meta.get("state")
        )
        self._gpu.show(snap.telemetry)
        log = self._log
        for reset, events in parts:
            if reset:
                log.reset(events)
                self._said_crash = False
            else:
                log.add(events)
        # an engine that died without a word left no event: the log says it once
        unrecorded_crash = "recorded_state" in self.model.meta
        if unrecorded_crash and not self._said_crash:
            log.say(f"✗ {self.model.ended}", "$error")
        self._said_crash = unrecorded_crash
        self._draw_history()
        self._draw_bar()

    def on_screen_resume(self) -> None:
        self._draw_covered()

    def _compositor_refresh(self) -> None:
        """Textual (8.2.8) hands a background screen's dirty regions to the dialog on top and
        marks the background for another repaint, which dirties it again: under an open
        dialog the whole terminal was repainted twice a second for as long as it stayed open,
        with nothing changing (figures in decision 0038).
        Once the regions are handed over there is nothing left to repaint here: nothing is
        drawn on this screen while it is covered (`_draw_covered`)."""
        super()._compositor_refresh()
        if self is not self.app.screen:
            self._repaint_required = False

    # --- notifications ----------------------------------------------------------------------

    def _announce(self, snap) -> None:
        """Toasts, one bell, and the user's command for what is new (live sessions only).
        Milestones arrive in full; the other events may be the tail of a long batch."""
        batch = {e.id: e for e in (*snap.events, *snap.milestones)}
        found = notices(batch.values())
        settings: NotifySettings = getattr(self.app, "notify_settings", NotifySettings())
        for n in found:
            more = f" (+{n.count - 1} more)" if n.count > 1 else ""
            self.notify(n.message + more, severity=n.severity, markup=False)  # type: ignore[arg-type]
            if settings.command and n.kind in settings.on:
                self._run_notify(settings.command, n, settings.timeout_s)
        if any(n.bell for n in found):
            self.app.bell()

    @work(thread=True, group="notify", exit_on_error=False)
    def _run_notify(self, command: str, notice: Notice, timeout_s: float) -> None:
        env = notice_env(notice, self.source.name, self.source.folder)
        run_notify_command(command, env, timeout_s)

    def _display_now(self) -> float:
        return self.model.clock if self.model.clock is not None else self.now()

    def _draw_history(self) -> None:
        m = self.model
        ids, series = m.history()
        t1 = self._display_now()
        t0 = m.first_t or (series[0].points[0][0] if series else t1)
        if m.clock is None:
            t1 = quantize_end(t0, t1)
        colour = {b.id: i for i, b in enumerate(m.branches)}
        data = HistoryData(
            tuple(ids),
            tuple(colour.get(b, i) for i, b in enumerate(ids)),
            tuple(series),
            tuple(m.marks()),
            t0,
            max(t1, t0 + 1),
            live=m.clock is None,
            **reference_line(m),
        )
        old = self._plot.data
        if old is None or data == old:
            self._plot.data = data
            return
        # A live plot whose only change is its right edge (time passing) is redrawn at most
        # every PLOT_EDGE_S: the whole braille canvas is drawn again for it. A new point, mark
        # or branch is drawn at once.
        now = time.monotonic()
        if data.live and replace(old, t1=data.t1) == data and now - self._plot_t < PLOT_EDGE_S:
            return
        self._plot_t = now
        self._plot.data = data

    def _draw_bar(self) -> None:
        replay = None
        player = self.source.player
        if player is not None:
            done, total, _, _ = player.progress()
            replay = (player.playing, player.speed, done, total)
        content = bar_content(self.source.name, self.model, self.now(), replay)
        key = (content.plain, tuple(content.spans))  # Content's == compares the text only
        if key != self._bar_shown:
            self._bar_shown = key
            self._bar.update(content, layout=False)  # one line, whatever it says

    # --- selection and detail --------------------------------------------------------------

    @on(BeamPanel.Selected)
    def _selected(self, message: BeamPanel.Selected) -> None:
        self.selection = (message.branch, message.candidate)

    def watch_selection(self, selection: tuple[str | None, str | None]) -> None:
        # a branch's new best moves the selection with it: the keys mostly stay as they were
        if self._availability() != self._keys_shown:
            self.refresh_bindings()
        if selection[1]:
            self._load_detail(selection[1], None)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load_detail(self, candidate_id: str, open_tab: str | None) -> None:
        cand = self.model.candidate(candidate_id)
        detail = self.source.candidate_detail(cand) if cand else None
        self.post_message(DetailLoaded(detail, open_tab))

    @on(DetailLoaded)
    def _detail_loaded(self, message: DetailLoaded) -> None:
        d = message.detail
        if d is None or d.candidate.id != self.selection[1]:
            return
        self.query_one("#detail", CandidateDetail).show(d)
        if message.open_tab:
            self.app.push_screen(DetailScreen(d, message.open_tab))

    def _open_detail(self, tab: str) -> None:
        cid = self.selection[1]
        panel = self.query_one("#detail", CandidateDetail)
        if panel.detail is not None and panel.detail.candidate.id == cid:
            self.app.push_screen(DetailScreen(panel.detail, tab))
        elif cid:
            self._load_detail(cid, tab)

    def action_details(self) -> None:
        self._open_detail("code")

    def action_diff(self) -> None:
        self._open_detail("diff")

    # --- availability ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in STEERING:
            if not self.source.can_command:
                return False
            if not self.loaded:
                return None
            branch = self.model.branch(self.selection[0])
            if action in NEEDS_BRANCH and (branch is None or branch.state == "retired"):
                return None
            if action == "fork" and self.model.candidate(self.selection[1]) is None:
                return None
        if action in REPLAY:
            return self.source.player is not None
        if action == "detach":  # replay has no engine to leave running: its `q` quits
            return self.source.player is None
        if action in ("details", "diff"):
            if self._editing_filter():  # enter in the filter box keeps the filter
                return False
            if not self.selection[1]:
                return None
        if action == "clear_filter":
            return self.filter.active or self._editing_filter()
        return True

    # --- the / filter ---------------------------------------------------------------------

    def _filter_box(self) -> Input:
        return self.query_one("#filter", Input)

    def _editing_filter(self) -> bool:
        return self.is_mounted and self._filter_box().has_class("-editing")

    def action_filter(self) -> None:
        box = self._filter_box()
        box.add_class("-editing")
        # Shown and focused now, not on the next refresh (`focus()` is deferred): keys typed
        # right after `/` (a paste, tmux send-keys) must land in the box, not on the beam.
        box.display = True
        self.set_focus(box)
        self.refresh_bindings()

    def set_filter(self, text: str) -> None:
        """Filter the beam and the event log (an empty text shows everything)."""
        flt = Filter.parse(text)
        if flt == self.filter:
            return
        self.filter = flt
        self.query_one(BeamPanel).set_filter(flt)
        m = self.model
        self.query_one(EventLog).set_filter(
            (lambda e, line: flt.event(e, line, m.branch, m.candidate)) if flt.active else None,
            flt.text,
        )
        self.refresh_bindings()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.set_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        box = self._filter_box()
        box.remove_class("-editing")
        box.display = False
        self.set_focus(self.query_one(BeamPanel).option_list)
        self.refresh_bindings()

    def action_clear_filter(self) -> None:
        box = self._filter_box()
        box.value = ""
        self.set_filter("")
        self._filter_submitted()

    # --- steering --------------------------------------------------------------------------

    def _send(self, kind: str, args: dict[str, Any]) -> None:
        """Post a command, unless the session has ended: no engine would read it (`cockpit
        send --queue` keeps one for the next resume, deliberately)."""
        state = self.model.meta.get("state")
        if state in ENDED_STATES:
            self.notify(
                f"session {state}: no engine reads commands; `cockpit resume "
                f"{self.source.name}` continues it",
                title=f"{command_target(kind, args)} not sent",
                severity="warning",
                markup=False,
            )
            return
        self._post(kind, args)

    @work(thread=True, group="commands", exit_on_error=False)
    def _post(self, kind: str, args: dict[str, Any]) -> None:
        cid = self.source.post_command(kind, args, self.command_source)
        self.post_message(CommandPosted(cid, kind, args))

    @on(CommandPosted)
    def _posted(self, message: CommandPosted) -> None:
        self._mine.add(message.command_id)
        what = command_target(message.kind, message.args)
        toast = Notification(
            f"sent {what} (#{message.command_id}); waiting for the engine",
            timeout=self.app.NOTIFICATION_TIMEOUT,
            markup=False,
        )
        self._waiting[message.command_id] = toast
        self.app.post_message(Notify(toast))
        self.query_one(EventLog).say(f"→ sent {what} (#{message.command_id})")
        self.action_refresh()

    def action_toggle_branch(self) -> None:
        b = self.model.branch(self.selection[0])
        if b is not None:
            self._send("resume" if b.state == "paused" else "pause", {"branch": b.id})

    def action_toggle_all(self) -> None:
        self._send("resume" if self.model.paused_all else "pause", {})

    def action_fork(self) -> None:
        c = self.model.candidate(self.selection[1])
        if c is None:
            return
        families = sorted({b.family for b in self.model.branches if b.family})

        def done(args: dict[str, Any] | None) -> None:
            if args is not None:
                self._send("fork", {"candidate": c.id, **args})

        self.app.push_screen(ForkDialog(c.id, c.family, families), done)

    def action_redirect(self) -> None:
        b = self.model.branch(self.selection[0])
        if b is None:
            return

        def done(args: dict[str, Any] | None) -> None:
            if args is not None:
                self._send("redirect", {"branch": b.id, **args})

        self.app.push_screen(RedirectDialog(b.id, b.info.get("instruction")), done)

    def action_retire(self) -> None:
        b = self.model.branch(self.selection[0])
        if b is None:
            return

        def done(reason: str | None) -> None:
            if reason is not None:
                self._send("retire", {"branch": b.id, **({"reason": reason} if reason else {})})

        self.app.push_screen(RetireDialog(b.id, b.family), done)

    def action_set_model(self) -> None:
        b = self.model.branch(self.selection[0])
        models = sorted(
            {x.model for x in self.model.branches if x.model}
            | {m for m in [self.model.meta.get("model")] if m}
            | set(getattr(self.app, "models", ()))
        )

        def done(args: dict[str, Any] | None) -> None:
            if args is not None:
                self._send("set_model", args)

        self.app.push_screen(ModelDialog(b.id if b else None, b.model if b else None, models), done)

    def action_stop_engine(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self._send("stop", {})

        question = (
            "Stop the engine? It finishes the evaluation in flight; `cockpit resume` continues."
        )
        self.app.push_screen(ConfirmDialog(question, "Stop engine"), done)

    # --- replay ----------------------------------------------------------------------------

    def _tick(self) -> None:
        now = time.monotonic()
        dt, self._tick_t = now - self._tick_t, now
        player = self.source.player
        if player is not None and player.playing and not self._polling:
            self._polling = True
            self._play("advance", dt)

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def _play(self, method: str, *args: Any) -> None:
        try:
            snap = getattr(self.source.player, method)(*args)
        finally:
            self._polling = False
        if snap is not None:
            self.post_message(SnapshotLoaded(snap))

    def action_play(self) -> None:
        player = self.source.player
        if player is not None:
            player.playing = not player.playing
            self._tick_t = time.monotonic()
            self._draw_bar()

    def action_step(self) -> None:
        self._play("step", 1)

    def action_step_back(self) -> None:
        self._play("step_back")

    def action_to_start(self) -> None:
        self._play("to_start")

    def action_to_end(self) -> None:
        self._play("to_end")

    def action_next_milestone(self) -> None:
        self._play("next_milestone")

    def _change_speed(self, direction: int) -> None:
        player = self.source.player
        if player is None:
            return
        speeds = getattr(player, "SPEEDS", (1, 10, 100, 1000))
        faster = [s for s in speeds if s > player.speed]
        slower = [s for s in speeds if s < player.speed]
        if direction > 0 and faster:
            player.speed = faster[0]
        elif direction < 0 and slower:
            player.speed = slower[-1]
        self._draw_bar()

    def action_slower(self) -> None:
        self._change_speed(-1)

    def action_faster(self) -> None:
        self._change_speed(+1)

    # --- the rest --------------------------------------------------------------------------

    @work(thread=True, group="summary", exit_on_error=False)
    def _summarize(self) -> None:
        mark = read_last_looked(self.source.folder, self.user)
        since = mark.event_id if mark else 0
        summary = summarize(self.source.events_since(since, SUMMARY_KINDS), mark)
        summary.add_spend(self.source.spend_since(since))
        self.post_message(SummaryReady(summary, self.model.last_event_id))

    @on(SummaryReady)
    def _summary_ready(self, message: SummaryReady) -> None:
        lines = summary_lines(message.summary, self.now())
        if message.summary.empty:
            self.notify(lines[0][0])
            self.remember_last_looked()
            return
        self.app.push_screen(SinceLastLookedScreen(lines), lambda _: self.remember_last_looked())

    def remember_last_looked(self) -> None:
        """Mark everything shown so far as seen (live sessions only; replay never marks)."""
        if self.source.can_command and self.loaded:
            mark = LastLooked(self.model.last_event_id, self.now())
            write_last_looked(self.source.folder, mark, self.user)

    def action_help(self) -> None:
        rows = []
        for active in self.active_bindings.values():
            b = active.binding
            if active.node is self and b.description:
                rows.append((self.app.get_key_display(b), b.description, b.id or ""))
        rows += [("ctrl+p", e.name, "palette") for e in self.PALETTE_ONLY]
        self.app.push_screen(HelpScreen(rows))

    def action_detach(self) -> None:
        self.remember_last_looked()
        self.app.exit()

    def action_quit_replay(self) -> None:
        self.app.exit()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure lands here: shown, never fatal (the engine is unaffected)."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self._polling = False
            self.notify(
                f"{type(error).__name__}: {error}", title=event.worker.group, severity="error"
            )


# every action the screen's keys run (the footer shows those `check_action` allows)
ACTIONS = tuple(dict.fromkeys(b.action for b in MainScreen.BINDINGS))
