"""`CandidateRepo`: every candidate, failed ones too, as a commit in `<session_dir>/repo/`.

Commits are made without a working tree or an index: blob, tree and commit objects are written
straight into the object database and the branch ref is then moved. Branches evaluated
concurrently therefore never fight over a checkout, and nothing but `refs/` changes on disk.

History shape: a candidate's commit has its *parent candidate's* commit as first parent (the
lineage `git log --first-parent` follows, across branches for forks). When the branch's tip is
another commit, e.g. a failed sibling attempt, that tip becomes the second parent, so the branch
ref reaches every attempt ever made on it: `git log <branch>` lists them all, nothing is ever
unreachable (or garbage-collectable), and `git log --graph --all` draws the exploration tree.

Crash safety (SIGKILL at any instant, and machine crashes): objects are written to a temporary
file and renamed into place (gitdb), then fsynced, and only then is the ref moved, by writing
`<ref>.lock`, fsyncing it and renaming it over the ref (git's own protocol). A kill before the
rename leaves the old ref and at worst unreferenced objects; `git fsck` stays clean. It may leave
a stale `<ref>.lock` or temporary object file behind, which `recover()` removes: the engine calls
it after taking the session's engine lock, when no other writer can exist.

Objects are written in Python (gitdb's loose-object writer, no process per commit); reads go
through gitpython's persistent `git cat-file` process, and `log` runs `git log`.
"""

from __future__ import annotations

import binascii
import contextlib
import difflib
import io
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
from git.objects import Commit
from git.objects.fun import tree_to_stream
from gitdb import IStream, LooseObjectDB
from gitdb.util import bin_to_hex, hex_to_bin

IDENTITY = "cockpit"
DEFAULT_FILENAME = "kernel.py"
_BRANCH_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_FILENAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$")


class RefLocked(RuntimeError):
    """A `<ref>.lock` exists: another writer, or a writer that was killed (see `recover()`)."""


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    time: int
    subject: str
    body: str

    @property
    def candidate(self) -> str:
        """The candidate id: the first word of the subject (see format_commit_message)."""
        return self.subject.split(" ", 1)[0]


def _check_branch(branch: str) -> None:
    if not _BRANCH_RE.match(branch) or ".." in branch or branch.endswith((".lock", ".")):
        raise ValueError(f"bad branch name {branch!r} (letters, digits, '.', '_', '-')")


def _check_filename(filename: str) -> None:
    if not _FILENAME_RE.match(filename):
        raise ValueError(f"bad file name {filename!r} (one path component)")


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _commit_bytes(tree: bytes, parents: list[str], message: str) -> bytes:
    """A commit object, byte for byte as `git commit-tree` writes one (identity: cockpit)."""
    now = int(time.time())
    offset = time.localtime(now).tm_gmtoff
    sign = "+" if offset >= 0 else "-"
    zone = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    ident = f"{IDENTITY} <{IDENTITY}> {now} {zone}"
    lines = [f"tree {bin_to_hex(tree).decode()}"]
    lines += [f"parent {p}" for p in parents]
    body = message if message.endswith("\n") else message + "\n"
    lines += [f"author {ident}", f"committer {ident}", "", body]
    return "\n".join(lines).encode("utf-8")


class CandidateRepo:
    """The session's git repository of candidates (created on first use)."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not (self.path / ".git").exists():
            if not create:
                raise FileNotFoundError(f"no candidate repository at {self.path}")
            self.path.mkdir(parents=True, exist_ok=True)
            repo = git.Repo.init(self.path)
            with repo.config_writer() as config:
                config.set_value("user", "name", IDENTITY)
                config.set_value("user", "email", IDENTITY)
            repo.close()
        self.repo = git.Repo(self.path)
        self.git_dir = Path(self.repo.git_dir)
        self._lock = threading.Lock()
        # Objects are written in-process by gitdb's loose-object writer: gitpython's own store
        # spawns `git hash-object` per object, three processes per candidate.
        self._loose = LooseObjectDB(str(self.git_dir / "objects"))
        # read-only like git's objects, but the user's alone (gitdb's default is 0444): the
        # candidates and their messages are as private as the rest of the session folder
        self._loose.new_objects_mode = 0o400
        self._head_born = False

    def close(self) -> None:
        self.repo.close()

    def __enter__(self) -> CandidateRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ---------------------------------------------------------------------------

    def commit_candidate(
        self,
        branch: str,
        candidate_id: str,
        filename: str,
        source: str,
        message: str,
        parent_sha: str | None = None,
    ) -> str:
        """Commit `source` as `filename` on `refs/heads/<branch>`; returns the commit sha.

        Idempotent for the branch's last commit: committing the same candidate again (an engine
        resumed after a kill between this commit and recording its sha) returns that commit."""
        _check_branch(branch)
        _check_filename(filename or DEFAULT_FILENAME)
        words = message.split(maxsplit=1)
        if not words or words[0] != candidate_id:
            raise ValueError(f"message must start with the candidate id {candidate_id!r}")
        with self._lock:
            parents = []
            if parent_sha is not None:
                if not self._has(parent_sha):
                    raise ValueError(f"parent commit {parent_sha} is not in {self.path}")
                parents.append(parent_sha)
            blob = self._store(b"blob", source.encode("utf-8"))
            stream = io.BytesIO()
            tree_to_stream([(blob, 0o100644, filename or DEFAULT_FILENAME)], stream.write)
            tree = self._store(b"tree", stream.getvalue())

            ref = f"refs/heads/{branch}"
            tip = self.resolve(ref)
            if tip is not None and self._is_same(tip, candidate_id, tree, parent_sha):
                return tip
            if tip is not None and tip not in parents:
                parents.append(tip)
            commit = self._store(b"commit", _commit_bytes(tree, parents, message))
            self._fsync_objects([blob, tree, commit])
            sha = bin_to_hex(commit).decode()
            self._write_ref(ref, sha + "\n")
            self._point_head_at(ref)
            return sha

    def tag_best(self, branch: str, sha: str) -> None:
        """Move the lightweight tag `best/<branch>` to `sha`."""
        _check_branch(branch)
        if not self._has(sha):
            raise ValueError(f"commit {sha} is not in {self.path}")
        with self._lock:
            self._write_ref(f"refs/tags/best/{branch}", sha + "\n")

    def recover(self) -> list[str]:
        """Remove what a killed writer leaves: ref lock files and temporary object files.

        Call only while holding the session's engine lock (no other writer may exist)."""
        removed = []
        candidates = [*(self.git_dir / "refs").rglob("*.lock")]
        candidates += [self.git_dir / n for n in ("HEAD.lock", "packed-refs.lock", "index.lock")]
        objects = self.git_dir / "objects"
        candidates += [p for p in objects.glob("obj*") if p.is_file()]  # gitdb's mkstemp
        candidates += objects.glob("*/tmp_obj_*")  # git's own
        for path in candidates:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(str(path.relative_to(self.git_dir)))
        return removed

    def _store(self, kind: bytes, data: bytes) -> bytes:
        return self._loose.store(IStream(kind, len(data), io.BytesIO(data))).binsha

    def _fsync_objects(self, binshas: list[bytes]) -> None:
        dirs = set()
        for binsha in binshas:
            hexsha = bin_to_hex(binsha).decode()
            path = self.git_dir / "objects" / hexsha[:2] / hexsha[2:]
            if path.exists():  # absent only if it already lives in a pack
                _fsync_path(path)
                dirs.add(path.parent)
        for d in dirs:
            _fsync_path(d, directory=True)
        _fsync_path(self.git_dir / "objects", directory=True)

    def _write_ref(self, ref: str, content: str) -> None:
        """git's ref protocol: exclusive `<ref>.lock`, write, fsync, rename over the ref."""
        path = self.git_dir / ref
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = path.with_name(path.name + ".lock")
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise RefLocked(f"{lock} exists (another writer, or a killed one: recover())") from None
        try:
            data = memoryview(content.encode())
            while data:  # a short write (a disk that just filled up) must not leave half a ref
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            lock.unlink()
            raise
        os.close(fd)
        os.replace(lock, path)
        _fsync_path(path.parent, directory=True)

    def _point_head_at(self, ref: str) -> None:
        """Give an empty repository's HEAD the first branch, so a plain `git log` works."""
        if self._head_born:
            return
        head = (self.git_dir / "HEAD").read_text().strip()
        if head.startswith("ref: ") and self.resolve(head[5:]) is None:
            self._write_ref("HEAD", f"ref: {ref}\n")
        self._head_born = True

    # --- reading ---------------------------------------------------------------------------

    def _has(self, sha: str) -> bool:
        try:
            self.repo.odb.info(hex_to_bin(sha))  # loose or packed (git cat-file)
            return True
        except (ValueError, TypeError, binascii.Error):
            return False

    def _is_same(self, sha: str, candidate_id: str, tree: bytes, parent: str | None) -> bool:
        commit = Commit(self.repo, hex_to_bin(sha))
        first_parent = commit.parents[0].hexsha if commit.parents else None
        return (
            commit.message.split(" ", 1)[0].strip() == candidate_id
            and commit.tree.binsha == tree
            and first_parent == parent
        )

    def resolve(self, ref: str) -> str | None:
        """The sha a ref points to (loose or packed), or None if it does not exist."""
        try:
            return git.Reference(self.repo, ref, check_path=False).commit.hexsha
        except (ValueError, OSError):
            return None

    def tip(self, branch: str) -> str | None:
        return self.resolve(f"refs/heads/{branch}")

    def best(self, branch: str) -> str | None:
        return self.resolve(f"refs/tags/best/{branch}")

    def branches(self) -> dict[str, str]:
        return {h.name: h.commit.hexsha for h in self.repo.heads}

    def read_source(self, sha: str, filename: str | None = None) -> str:
        """The candidate file in commit `sha` (the only file, unless `filename` says which)."""
        tree = self.repo.commit(sha).tree
        blob = tree[filename] if filename else next(iter(tree.blobs))
        return blob.data_stream.read().decode("utf-8")

    def filename(self, sha: str) -> str:
        return next(iter(self.repo.commit(sha).tree.blobs)).name

    def log(self, branch: str | None = None, max_count: int | None = None) -> list[CommitInfo]:
        """Newest first, like `git log --date-order <branch>` (never a parent before its
        children, even within one second); every branch when `branch` is None."""
        args: list[Any] = ["--date-order", "--format=%H%x1f%P%x1f%ct%x1f%s%x1f%b%x1e"]
        if max_count is not None:
            args.append(f"--max-count={max_count}")
        if branch is None:
            if not self.repo.heads:
                return []
            args.append("--all")
        else:
            _check_branch(branch)
            if self.tip(branch) is None:
                return []
            args += [f"refs/heads/{branch}", "--"]
        out = self.repo.git.log(*args, strip_newline_in_stdout=False)
        infos = []
        for record in out.split("\x1e"):
            record = record.strip("\n")
            if not record:
                continue
            sha, parents, ctime, subject, body = record.split("\x1f", 4)
            infos.append(CommitInfo(sha, tuple(parents.split()), int(ctime), subject, body.strip()))
        return infos

    def diff(self, sha_a: str, sha_b: str, context: int = 3) -> str:
        """Unified diff of the candidate file between two commits (e.g. parent and child)."""
        a, b = self.read_source(sha_a), self.read_source(sha_b)
        lines = difflib.unified_diff(
            a.splitlines(keepends=True),
            b.splitlines(keepends=True),
            fromfile=f"a/{self.filename(sha_a)} ({sha_a[:10]})",
            tofile=f"b/{self.filename(sha_b)} ({sha_b[:10]})",
            n=context,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _fmt_us(value: Any) -> str:
    return f"{value:.2f}us" if isinstance(value, int | float) else "-"


def format_commit_message(
    candidate_id: str,
    result: dict[str, Any] | None,
    *,
    branch: str | None = None,
    parent: str | None = None,
    family: str | None = None,
    model: str | None = None,
) -> str:
    """`<candidate_id> <status> <geomean>`, then the key metrics and trailers.

    `result` is the harness's result record (or None for a candidate committed before its
    verdict). The first line is what `git log --oneline` shows and what `commit_candidate`
    checks, so it always starts with the candidate id."""
    result = result or {}
    status = result.get("status") or "unevaluated"
    lines = [f"{candidate_id} {status} {_fmt_us(result.get('geomean_us'))}", ""]
    for key in ("score_us", "hidden_geomean_us"):
        if result.get(key) is not None:
            lines.append(f"{key}: {_fmt_us(result[key])}")
    for name, speedup in (result.get("speedups") or {}).items():
        if isinstance(speedup, int | float):
            lines.append(f"speedup vs {name}: {speedup:.2f}x")
    if isinstance(result.get("roofline_pct"), int | float):
        lines.append(f"roofline: {result['roofline_pct']:.1f}%")
    if result.get("comparable") is False:
        lines.append("comparable: no (interpreter timing)")
    if result.get("tier") in ("screened", "promoted"):
        why = (result.get("promotion") or {}).get("why", "")
        lines.append(f"tier: {result['tier']}{' (' + why + ')' if why else ''}")
    reasons = result.get("reasons") or []
    if reasons:
        lines.append("reasons:")
        for r in reasons[:5]:
            where = f" [{r.get('shape')}]" if r.get("shape") else ""
            msg = str(r.get("message", "")).splitlines()[0][:200] if r.get("message") else ""
            lines.append(f"- {r.get('kind', '?')}{where}: {msg}")
        if len(reasons) > 5:
            lines.append(f"- ... {len(reasons) - 5} more")
    trailers = [("Branch", branch), ("Parent", parent), ("Family", family), ("Model", model)]
    trailers = [(k, v) for k, v in trailers if v]
    if trailers:
        lines.append("")
        lines += [f"{k}: {v}" for k, v in trailers]
    return "\n".join(lines).rstrip() + "\n"
