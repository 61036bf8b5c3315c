"""The tables of `session.db`, and which of them are derived.

`events` is the only source of truth for the story; `candidates`, `branches` and `session` are
derived from it by `apply_event` and can be rebuilt from it at any time. `telemetry` and
`commands` are inputs of their own: telemetry is too frequent to be an event (one sample a
second per GPU for days), and commands are written by other processes (TUI, `cockpit send`),
which must not have to know how to derive anything.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 1

DERIVED_TABLES = ("candidates", "branches", "session")

DDL = """
CREATE TABLE IF NOT EXISTS events (
    id        INTEGER PRIMARY KEY,
    t         REAL NOT NULL,
    kind      TEXT NOT NULL,
    branch    TEXT,
    candidate TEXT,
    payload   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS events_kind ON events(kind, id);
CREATE INDEX IF NOT EXISTS events_candidate ON events(candidate, id);

CREATE TABLE IF NOT EXISTS candidates (
    id          TEXT PRIMARY KEY,
    branch      TEXT,
    parent      TEXT,
    family      TEXT,
    status      TEXT,
    geomean_us  REAL,
    score_us    REAL,
    commit_sha  TEXT,
    model       TEXT,
    created_t   REAL,
    evaluated_t REAL,
    summary     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS candidates_branch ON candidates(branch);

CREATE TABLE IF NOT EXISTS branches (
    id             TEXT PRIMARY KEY,
    family         TEXT,
    state          TEXT,
    model          TEXT,
    best_candidate TEXT,
    best_us        REAL,
    created_t      REAL,
    updated_t      REAL,
    info           TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS session (
    key   TEXT PRIMARY KEY,
    value TEXT
);

CREATE TABLE IF NOT EXISTS telemetry (
    t            REAL NOT NULL,
    gpu          INTEGER,
    util         REAL,
    mem_used     REAL,
    mem_total    REAL,
    power_w      REAL,
    temp_c       REAL,
    sm_clock_mhz REAL,
    cpu_pct      REAL,
    ram_pct      REAL,
    node         TEXT
);
CREATE INDEX IF NOT EXISTS telemetry_t ON telemetry(t);

CREATE TABLE IF NOT EXISTS commands (
    id          INTEGER PRIMARY KEY,
    t           REAL NOT NULL,
    kind        TEXT NOT NULL,
    args        TEXT NOT NULL DEFAULT '{}',
    source      TEXT,
    state       TEXT NOT NULL DEFAULT 'pending',
    ack_t       REAL,
    ack_message TEXT
);
CREATE INDEX IF NOT EXISTS commands_state ON commands(state, id);
"""


class SchemaTooNew(RuntimeError):
    """The file was written by a newer cockpit; reading it with this one could misread it."""


# Columns added to a table after files were written without them (nullable, so a cockpit that
# does not know them still reads and writes the file): added when a file is opened to write,
# read as NULL from a file opened read-only (`select_columns`).
ADDED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {"telemetry": (("node", "TEXT"),)}


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table that is missing (idempotent) and stamp the schema version."""
    conn.executescript(DDL)
    add_columns(conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def add_columns(conn: sqlite3.Connection) -> None:
    """Add the ADDED_COLUMNS a file written before them lacks (idempotent)."""
    for table, cols in ADDED_COLUMNS.items():
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in cols:
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def select_columns(conn: sqlite3.Connection, table: str, columns: tuple[str, ...]) -> str:
    """`columns` for a SELECT from `table`, NULL for an added column that this file lacks."""
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    return ", ".join(c if c in have else f"NULL AS {c}" for c in columns)


def check_schema(conn: sqlite3.Connection) -> int:
    """Return the file's schema version; refuse a newer one than this code knows."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(f"session.db has schema {version}; this cockpit reads {SCHEMA_VERSION}")
    return version
