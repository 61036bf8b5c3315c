"""`SessionRecord`: the session's SQLite file, written by one engine and read by any number of views.

Durability: WAL with `synchronous=FULL`. The promise is "a crash loses at most the evaluation in
flight", and a result is shown only after the transaction that records it has committed. Against
a process crash (SIGKILL, OOM kill) `NORMAL` would already keep that promise, because a commit
is in the WAL file (the OS page cache) before `append` returns. Against a machine crash (kernel
panic, a GPU driver hang that takes the host down, power loss) it would not: in WAL mode `NORMAL`
syncs only at checkpoints, so the last transactions before the crash, results the human may
already have seen and acted on, can roll back. `FULL` syncs the WAL on every commit: one fsync
per transaction, 0.3 ms per event on the 2-core development box against 0.03 ms with NORMAL
(bench/bench_store.py), next to evaluations that take seconds. The stronger promise is cheap.
Bulk writers group appends with `transaction()` and pay one fsync per group.

Concurrency: SQLite's own locking. WAL lets readers (`open_readonly`, e.g. the TUI attached over
ssh) read a consistent snapshot while the engine writes, and the engine never waits for them.
Other processes may also open the file read-write to post commands; every write transaction is
`BEGIN IMMEDIATE` (take the write lock up front, so two writers queue on `busy_timeout` instead of
failing a read-to-write upgrade), and `busy_timeout` makes a briefly busy file a wait, not an
error. Only the engine appends events, guarded by `acquire_engine_lock()`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import astuple
from pathlib import Path
from typing import Any

from cockpit.store import events as ev
from cockpit.store import queries
from cockpit.store.commands import normalize_command_kind
from cockpit.store.derive import apply_event, clear_derived
from cockpit.store.lock import EngineLock, acquire_engine_lock
from cockpit.store.models import (
    TELEMETRY_COLUMNS,
    Branch,
    Candidate,
    Command,
    Event,
    TelemetrySample,
    dumps,
    loads,
)
from cockpit.store.schema import SCHEMA_VERSION, add_columns, check_schema, create_schema

DB_FILE = "session.db"
BUSY_TIMEOUT_MS = 10_000


class ReadOnlyRecord(RuntimeError):
    """A write was attempted through a read-only view of the record."""


class SessionDamaged(RuntimeError):
    """A session folder that cannot be used as it is (its record unreadable, its repository
    missing). The message is one line that names the file; the CLI prints it and exits 2."""


class RecordUnreadable(SessionDamaged, sqlite3.DatabaseError):
    """`session.db` is not a readable session record: truncated, corrupted, empty, not SQLite.
    Also a `sqlite3.DatabaseError`, so callers that skip unreadable records still do."""

    def __init__(self, db_path: Path, why: str) -> None:
        self.db_path = db_path
        super().__init__(
            f"{db_path}: the session record is unreadable ({why}); nothing was changed: keep a "
            "copy of the folder (`sqlite3 session.db .recover` may save its events)"
        )


class RecordNotWritable(SessionDamaged, sqlite3.DatabaseError):
    """`session.db` cannot be opened for writing: a read-only folder or file system, a full
    disk. The record itself may be whole."""

    def __init__(self, db_path: Path, why: str) -> None:
        self.db_path = db_path
        super().__init__(
            f"{db_path}: cannot write the session record ({why}); nothing was changed: make "
            "its folder writable or free space, then try again"
        )


# What SQLite says when it cannot write the file or create its -wal/-shm next to it
_NOT_WRITABLE = (
    "unable to open database file",
    "attempt to write a readonly database",
    "disk i/o error",
    "database or disk is full",
)


def _not_writable(exc: sqlite3.DatabaseError) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and str(exc).lower() in _NOT_WRITABLE


# The record opened last in this process: the CLI names it when a read fails later on a damaged
# page (`sqlite3.DatabaseError` raised by a query, not by the open).
last_opened: Path | None = None


def db_path_of(path: str | Path) -> Path:
    """Accept a session folder or the database file itself."""
    path = Path(path)
    return path / DB_FILE if path.is_dir() or path.suffix != ".db" else path


class SessionRecord:
    """The session record. Open with `open()` (read-write) or `open_readonly()` (views).

    Thread-safe: one connection guarded by a lock, so the engine's loop and its telemetry
    sampler may share a record."""

    def __init__(self, conn: sqlite3.Connection, db_path: Path, readonly: bool) -> None:
        self._conn = conn
        self.db_path = db_path
        self.session_dir = db_path.parent
        self.readonly = readonly
        self._lock = threading.RLock()
        self._depth = 0  # nesting of write transactions
        self._reading = 0  # nesting of read snapshots
        self._engine_lock: EngineLock | None = None
        global last_opened
        last_opened = db_path

    # --- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False) -> SessionRecord:
        """Open read-write (the engine, or a process posting commands)."""
        db_path = db_path_of(path)
        if not create and not db_path.exists():
            raise FileNotFoundError(f"no session record at {db_path}")
        db_path.parent.mkdir(parents=True, exist_ok=True)
        if not create and db_path.stat().st_size == 0:
            # an emptied file reads as a new database: the WAL pragma alone would write to it,
            # and creating the schema would start the session over, its history lost unseen
            raise RecordUnreadable(db_path, "no session tables in it: empty or truncated")
        try:
            conn = sqlite3.connect(
                db_path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1e3,
            )
        except sqlite3.OperationalError as exc:
            raise RecordNotWritable(db_path, str(exc)) from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            version = check_schema(conn)  # read before anything writes to the file
            if not create and version == 0:
                raise RecordUnreadable(db_path, "no session tables in it: empty or truncated")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            if version < SCHEMA_VERSION:  # new file (or an older schema): create
                create_schema(conn)
            else:
                add_columns(conn)
        except RecordUnreadable:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _not_writable(exc):
                raise RecordNotWritable(db_path, str(exc)) from None
            raise RecordUnreadable(db_path, str(exc)) from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, db_path, readonly=False)

    @classmethod
    def open_readonly(cls, path: str | Path) -> SessionRecord:
        """Open for reading only, safe while the engine writes (`mode=ro`: cannot write)."""
        db_path = db_path_of(path)
        if not db_path.exists():
            raise FileNotFoundError(f"no session record at {db_path}")
        uri = f"{db_path.resolve().as_uri()}?mode=ro"
        conn = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, timeout=10.0
        )
        try:
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                version = check_schema(conn)
            except sqlite3.OperationalError as exc:
                # A WAL database in a read-only folder: SQLite cannot make its -shm. With no
                # -wal file beside it the database file is the whole record, so it is read as
                # an immutable file (an engine could not be writing to that folder anyway).
                if not _not_writable(exc) or Path(f"{db_path}-wal").exists():
                    raise
                conn.close()
                conn = sqlite3.connect(
                    uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False
                )
                version = check_schema(conn)
            if version == 0:
                raise RecordUnreadable(db_path, "no session tables in it: empty or truncated")
        except RecordUnreadable:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise RecordUnreadable(db_path, str(exc)) from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, db_path, readonly=True)

    def close(self) -> None:
        with self._lock:
            self.release_engine_lock()
            self._conn.close()

    def __enter__(self) -> SessionRecord:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        return self.session_dir.name

    # --- engine lock -----------------------------------------------------------------------

    def acquire_engine_lock(self) -> EngineLock:
        """Become this session's only engine, or raise SessionLocked."""
        self._writable()
        if self._engine_lock is None or not self._engine_lock.held:
            self._engine_lock = acquire_engine_lock(self.session_dir)
        return self._engine_lock

    def release_engine_lock(self) -> None:
        if self._engine_lock is not None:
            self._engine_lock.release()
            self._engine_lock = None

    # --- writing ---------------------------------------------------------------------------

    def _writable(self) -> None:
        if self.readonly:
            raise ReadOnlyRecord(f"{self.db_path} is open read-only")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; nested uses join the outermost (one commit, one fsync)."""
        self._writable()
        with self._lock:
            if self._reading:
                raise RuntimeError("cannot write inside snapshot(); it is a read transaction")
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._conn
            except BaseException:
                self._depth = 0
                self._conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self._conn.execute("COMMIT")

    def checkpoint(self) -> None:
        """Move the write-ahead log's frames into the database (`wal_checkpoint(RESTART)`), so
        the next transaction writes the log from its start, over space the file already has."""
        self._writable()
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()

    def append(
        self,
        kind: str,
        payload: Mapping[str, Any] | None = None,
        branch: str | None = None,
        candidate: str | None = None,
        *,
        t: float | None = None,
    ) -> int:
        """Record one event and apply it to the derived tables, atomically. Returns its id."""
        if kind not in ev.KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        data = dict(payload or {})
        t = time.time() if t is None else t
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO events(t, kind, branch, candidate, payload) VALUES (?, ?, ?, ?, ?)",
                (t, kind, branch, candidate, dumps(data)),
            )
            event_id = cur.lastrowid
            apply_event(conn, Event(event_id, t, kind, branch, candidate, data))
        return event_id

    def rebuild(self) -> int:
        """Recompute every derived table from the events alone. Returns the events applied."""
        n = 0
        with self.transaction() as conn:
            clear_derived(conn)
            rows = conn.execute(
                "SELECT id, t, kind, branch, candidate, payload FROM events ORDER BY id"
            ).fetchall()
            for row in rows:
                apply_event(conn, Event.from_row(row))
                n += 1
        return n

    def add_telemetry(self, samples: Iterable[TelemetrySample | Mapping[str, Any]]) -> int:
        """Append a batch of samples in one transaction. Returns how many were written."""
        rows = [
            astuple(s)
            if isinstance(s, TelemetrySample)
            else tuple(s.get(c) for c in TELEMETRY_COLUMNS)
            for s in samples
        ]
        if not rows:
            return 0
        marks = ", ".join("?" * len(TELEMETRY_COLUMNS))
        with self.transaction() as conn:
            conn.executemany(
                f"INSERT INTO telemetry({', '.join(TELEMETRY_COLUMNS)}) VALUES ({marks})", rows
            )
        return len(rows)

    # --- commands --------------------------------------------------------------------------

    def post_command(
        self, kind: str, args: Mapping[str, Any] | None = None, source: str = ""
    ) -> int:
        """Queue a command for the engine (from the TUI, `cockpit send`, any process)."""
        name = normalize_command_kind(kind)
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO commands(t, kind, args, source) VALUES (?, ?, ?, ?)",
                (time.time(), name, dumps(dict(args or {})), source),
            )
            return cur.lastrowid

    def pending_commands(self) -> list[Command]:
        with self._lock:
            return queries.read_commands(self._conn, "pending")

    def commands(self, state: str | None = None) -> list[Command]:
        with self._lock:
            return queries.read_commands(self._conn, state)

    def ack_command(self, command_id: int, ok: bool, message: str = "") -> int:
        """Acknowledge a command with its result; appends `command_acked`. Returns the event id."""
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT kind, args FROM commands WHERE id = ?", (command_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no command {command_id}")
            branch = loads(row[1]).get("branch")
            payload = {"command_id": command_id, "ok": bool(ok), "message": message, "kind": row[0]}
            return self.append(ev.COMMAND_ACKED, payload, branch=branch)

    # --- reading ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[SessionRecord]:
        """Group several reads into one consistent view (one read transaction); nests."""
        with self._lock:
            if self._depth or self._reading:
                self._reading += 1
                try:
                    yield self
                finally:
                    self._reading -= 1
                return
            self._conn.execute("BEGIN")
            self._reading = 1
            try:
                yield self
            finally:
                self._reading = 0
                self._conn.execute("COMMIT")

    def events(
        self,
        after_id: int = 0,
        kinds: Iterable[str] | None = None,
        limit: int | None = None,
        candidate: str | None = None,
    ) -> list[Event]:
        with self._lock:
            return queries.read_events(self._conn, after_id, kinds, limit, candidate)

    def candidates(self, branch: str | None = None) -> list[Candidate]:
        with self._lock:
            return queries.read_candidates(self._conn, branch)

    def candidates_in(self, ids: Collection[str]) -> list[Candidate]:
        """The candidates among `ids` that exist, in the order they were first recorded."""
        with self._lock:
            return queries.read_candidates_in(self._conn, ids)

    def candidate(self, candidate_id: str) -> Candidate | None:
        with self._lock:
            return queries.read_candidate(self._conn, candidate_id)

    def branches(self) -> list[Branch]:
        with self._lock:
            return queries.read_branches(self._conn)

    def telemetry(
        self, since_t: float | None = None, limit: int | None = None
    ) -> list[TelemetrySample]:
        with self._lock:
            return queries.read_telemetry(self._conn, since_t, limit)

    def meta(self) -> dict[str, Any]:
        with self._lock:
            return queries.read_meta(self._conn)

    def last_event_id(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]

    def counts(self) -> dict[str, Any]:
        with self.snapshot():
            return queries.read_counts(self._conn)

    def integrity_check(self) -> str:
        """SQLite's own verdict on the file ('ok' when sound)."""
        with self._lock:
            return self._conn.execute("PRAGMA integrity_check").fetchone()[0]

    def execute(self, sql: str, args: Iterable[Any] = ()) -> list[tuple]:
        """A raw read for reports and tests (the schema is documented in schema.py)."""
        with self._lock:
            return self._conn.execute(sql, tuple(args)).fetchall()
