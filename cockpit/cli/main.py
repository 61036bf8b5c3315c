"""`cockpit …` sub-commands. Thin: parse, call into the harness/engine, render, pick an exit code.

Exit codes: 0 success (for `eval`: the candidate passed), 1 a verdict other than ok, 2 bad usage
or bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from cockpit.cli.common import UsageError, out_console, resolve_device, resolve_task


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        sys.stderr.write(f"cockpit: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)


def _mode(args: argparse.Namespace) -> str:
    return "final" if args.final else "quick" if args.quick else "iterate"


def cmd_tasks(args: argparse.Namespace) -> int:
    from rich.table import Table

    from cockpit.harness.task import TaskError, default_kernels_dir, list_tasks, load_task

    table = Table(title=f"tasks in {default_kernels_dir()}", title_justify="left")
    for col in ("task", "summary", "public", "hidden", "benchmark", "seeds"):
        table.add_column(col)
    rows = []
    for root in list_tasks():
        try:
            t = load_task(root)
        except TaskError as exc:
            table.add_row(root.name, f"[red]{exc}[/red]", "", "", "", "")
            continue
        g = t.shapes["gpu"]
        seeds = [p.stem for p in t.seeds()]
        rows.append({"name": t.name, "summary": t.summary, "path": str(t.root), "seeds": seeds})
        table.add_row(
            t.name,
            t.summary,
            str(len(g["public"])),
            str(len(g["hidden"])),
            str(len(g["benchmark"])),
            ", ".join(seeds),
        )
    if args.json:
        print(json.dumps(rows))
    else:
        out_console().print(table)
    return 0


def _progress_eval(task, candidate: Path, opts, quiet: bool):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from cockpit.harness.judge import evaluate

    if quiet or not sys.stderr.isatty():
        return evaluate(task, candidate, opts)
    with Progress(
        TextColumn("[bold]{task.fields[stage]:>7}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as prog:
        tid = prog.add_task("", total=1, stage="load")

        def cb(stage: str, detail: str, done: int, total: int) -> None:
            prog.update(tid, description=detail, completed=done, total=max(total, 1), stage=stage)

        opts.progress = cb
        return evaluate(task, candidate, opts)


def cmd_eval(args: argparse.Namespace) -> int:
    task = resolve_task(args.task)  # before the judge's imports (torch): a bad task.toml is quick
    from cockpit.harness.judge import CandidateError, Options
    from cockpit.harness.task import TaskError
    from cockpit.render import print_result

    cand = Path(args.candidate)
    if cand.is_dir():
        raise UsageError(
            f"{cand}: is a directory; a candidate is one Python file defining kernel()"
        )
    if not cand.is_file():
        raise UsageError(f"{cand}: no such candidate file")
    if args.parts is not None:
        return _eval_parts(args, cand)
    if args.backend == "ray":
        raise UsageError("--backend ray goes with --parts N (each part runs on a Ray worker)")
    if args.ray_address or args.ray_cpus:
        flag = "--ray-address" if args.ray_address else "--ray-cpus"
        raise UsageError(f"{flag} goes with --backend ray")
    opts = Options(
        device=resolve_device(args.device),
        mode=_mode(args),
        strict=args.strict,
        profile=not args.no_profile,
        shard=_shard(args.shard),
        exchange=args.exchange,
    )
    try:
        result = _progress_eval(task, cand, opts, quiet=args.json)
    except (CandidateError, TaskError) as exc:  # TaskError: reference.py raised
        raise UsageError(str(exc)) from None
    d = result.to_dict()
    if args.json:
        print(json.dumps(d))
    else:
        print_result(d, out_console())
    return 0 if result.ok else 1


def _part_devices(device: str, n: int) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES for each of n parts: one GPU each (parts sharing a GPU would disturb
    each other's timing); None on the CPU (the parts' times are then only correctness runs)."""
    if not device.startswith("cuda"):
        return [None] * n
    import torch

    from cockpit.engine.workers import visible_ids

    ids = visible_ids(os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count())
    if n > len(ids):
        raise UsageError(
            f"--parts {n}: only {len(ids)} GPU(s) visible; parts sharing a GPU would disturb "
            "each other's timing"
        )
    return ids[:n]


def _eval_parts(args: argparse.Namespace, cand: Path) -> int:
    """`eval --parts N`: the N shards as N processes side by side (one GPU each), merged; with
    `--backend ray`, as N Ray tasks of one GPU each (`cockpit.engine.ray_eval`)."""
    import contextlib
    import subprocess
    import time

    from rich.console import Console

    n = args.parts
    if n < 1:
        raise UsageError(f"--parts {n}: expected a positive number of parts")
    if args.shard:
        raise UsageError("--parts and --shard exclude each other (--parts runs every shard)")
    if args.backend == "ray":
        from cockpit.cli.loop import _ray_device

        device = _ray_device(args)
    else:
        from cockpit.cli.loop import _check_backend

        _check_backend("local", args.ray_address)
        if args.ray_cpus:
            raise UsageError("--ray-cpus goes with --backend ray")
        device = resolve_device(args.device)
    flags = ["--device", device, "--json"] + (
        [f"--{_mode(args)}"] if _mode(args) != "iterate" else []
    )
    flags += (["--strict"] if args.strict else []) + (["--no-profile"] if args.no_profile else [])
    flags += ["--exchange", args.exchange]
    if args.backend == "ray":
        return _eval_parts_on_ray(args, cand, n, device, flags)
    base = [sys.executable, "-m", "cockpit.cli", "eval", args.task, str(cand), *flags]
    procs = []
    for k, gpu in enumerate(_part_devices(device, n), start=1):
        env = dict(os.environ)
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        cmd = [*base, "--shard", f"{k}/{n}"]
        procs.append(
            subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
        )
    t0 = time.monotonic()
    console = Console(stderr=True)
    show = not args.json and sys.stderr.isatty()
    outs: list[tuple[str, str, int]] = [("", "", 0)] * n
    with console.status(f"{n} parts running", spinner="dots") if show else contextlib.nullcontext():
        for i, p in enumerate(procs):
            out, err = p.communicate()
            outs[i] = (out, err, p.returncode)
            if show:
                console.log(f"part {i + 1}/{n} done in {time.monotonic() - t0:.0f} s")
    return _merged(_part_results(outs), args.json)


def _eval_parts_on_ray(
    args: argparse.Namespace, cand: Path, n: int, device: str, flags: list[str]
) -> int:
    """The parts on a Ray cluster; the merged verdict names each part's node (`nodes`)."""
    from cockpit.engine.ray_backend import BackendUnavailable
    from cockpit.engine.ray_eval import run_parts

    task = resolve_task(args.task)
    try:
        done = run_parts(task.root, cand, n, device, flags, args.ray_address, args.ray_cpus or 1.0)
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None
    parts = _part_results([(d["stdout"], d["stderr"], d["rc"]) for d in done])
    for _, d in parts:  # judged from a copy on the node: named as given, as local parts are
        d["candidate"] = str(cand)
    return _merged(parts, args.json, nodes=[d["node"] for d in done])


def _part_results(outs: list[tuple[str, str, int]]) -> list[tuple[str, dict]]:
    """(stdout, stderr, exit code) of each part's `eval --shard K/N --json`: its verdict, or the
    part's own one-line error."""
    n = len(outs)
    parts = []
    for k, (out, err, rc) in enumerate(outs, start=1):
        last = (err.strip().splitlines() or [""])[-1]
        if rc == 2:
            raise UsageError(f"part {k}/{n}: {last.removeprefix('cockpit: error: ')}")
        try:
            parts.append((f"part {k}/{n}", json.loads(out.strip().splitlines()[-1])))
        except (IndexError, ValueError):
            raise UsageError(f"part {k}/{n} gave no result (exit {rc}): {last}") from None
    return parts


def _merged(
    parts: list[tuple[str, dict]],
    as_json: bool,
    out: str | None = None,
    nodes: list[dict] | None = None,
) -> int:
    """Merge the parts of a sharded evaluation, write and show the verdict, its exit code."""
    from cockpit.harness.shards import MergeError, merge
    from cockpit.render import print_result

    try:
        d = merge(parts)
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    if nodes:
        d["nodes"] = nodes  # per part, in order: the Ray node (and GPU) that ran it
    if out:
        Path(out).write_text(json.dumps(d))
    if as_json:
        print(json.dumps(d))
    else:
        print_result(d, out_console())
    return 0 if d["status"] == "ok" else 1


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    from cockpit.harness.shards import MergeError, parse_shard

    try:
        return parse_shard(text)
    except MergeError as exc:
        raise UsageError(str(exc)) from None


def cmd_merge(args: argparse.Namespace) -> int:
    from cockpit.harness.shards import MergeError, load_part

    try:
        parts = [(p, load_part(Path(p))) for p in args.parts]
    except MergeError as exc:
        raise UsageError(str(exc)) from None
    return _merged(parts, args.json, args.out)


def cmd_baseline(args: argparse.Namespace) -> int:
    from rich.table import Table

    from cockpit.harness import baselines
    from cockpit.harness.judge import Options
    from cockpit.render import fmt_us

    task = resolve_task(args.task)
    device = resolve_device(args.device)
    variants = args.variants or list(baselines.VARIANTS)
    unknown = [v for v in variants if v not in baselines.VARIANTS]
    if unknown:
        raise UsageError(
            f"unknown baseline variant {unknown[0]!r}: choose from {', '.join(baselines.VARIANTS)}"
        )
    table = Table(title=f"baselines · {task.name} · {device}", title_justify="left")
    for col in ("baseline", "status", "geomean", "hidden geomean", "score"):
        table.add_column(col)
    out = {}
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for v in variants:
            path = Path(tmp) / f"baseline_{v.replace('-', '_')}.py"
            path.write_text(baselines.baseline_source(task, v))
            opts = Options(device=device, mode=_mode(args), profile=False)
            from cockpit.harness.judge import evaluate
            from cockpit.harness.task import TaskError

            try:
                r = evaluate(task, path, opts, exempt=True)
            except TaskError as exc:  # reference.py raised
                raise UsageError(str(exc)) from None
            d = r.to_dict()
            d["candidate"] = v
            out[v] = d
            if r.ok:
                baselines.store(task, device, v, d)
            table.add_row(
                v, r.status, fmt_us(r.geomean_us), fmt_us(r.hidden_geomean_us), fmt_us(r.score_us)
            )
            if not r.ok:
                table.add_row("", "; ".join(x.line() for x in r.reasons)[:200], "", "", "")
    if args.json:
        print(json.dumps(out))
    else:
        con = out_console()
        con.print(table)
        con.print(f"stored in {baselines.path_for(task, device)}")
    return 0 if all(d["status"] == "ok" for d in out.values()) else 1


def build_parser() -> argparse.ArgumentParser:
    # stdlib only (the cockpit must not import the harness: tests/tui/test_units.py)
    from cockpit.harness import DEFAULT_EXCHANGE, EXCHANGES

    p = _Parser(
        prog="cockpit",
        description="Kernel Cockpit: an LLM agent optimizes GPU kernels against a verifier it cannot fool.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    s = sub.add_parser("tasks", help="list kernel tasks")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_tasks)

    def eval_opts(s: argparse.ArgumentParser) -> None:
        s.add_argument("--device", help="cpu or cuda (default: cuda when visible)")
        g = s.add_mutually_exclusive_group()
        g.add_argument(
            "--final", action="store_true", help="final-ranking precision (SEM < 0.1%%, means)"
        )
        g.add_argument(
            "--quick", action="store_true", help="a handful of samples: smoke tests and CI"
        )
        s.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    s = sub.add_parser("eval", help="verify and time one candidate file")
    s.add_argument("task", help="a task name under kernels/ or a path to a task folder")
    s.add_argument("candidate", help="a Python file defining kernel(...)")
    eval_opts(s)
    s.add_argument(
        "--strict", action="store_true", help="the task's stricter, size-independent check"
    )
    s.add_argument("--no-profile", action="store_true", help="skip the kernel census")
    s.add_argument(
        "--exchange",
        choices=list(EXCHANGES),
        default=DEFAULT_EXCHANGE,
        help="how tensors cross between the judge and the candidate's process: two sealed "
        "shared-memory regions (the default; 8x faster per transfer on an H200) or a file each "
        "(same checks)",
    )
    s.add_argument(
        "--shard",
        metavar="K/N",
        help="only the K-th of N parts of the hidden and benchmark shapes (one per GPU; part 1 "
        "also verifies the public ones); combine the N results with `cockpit merge`",
    )
    s.add_argument(
        "--parts",
        type=int,
        metavar="N",
        help="run the N shards side by side, one GPU each, and merge them (a long --final on a "
        "multi-GPU host, or with --backend ray on a cluster's GPUs)",
    )
    from cockpit.cli.loop import backend_opts

    backend_opts(s, default="local", unit="one part")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser(
        "merge", help="combine the results of `eval --shard K/N` into one evaluation"
    )
    s.add_argument(
        "parts", nargs="+", metavar="PART.json", help="every part's `eval --json` output"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    s.add_argument("--out", metavar="FILE", help="also write the merged JSON to FILE")
    s.set_defaults(func=cmd_merge)

    s = sub.add_parser(
        "baseline", help="measure the reference and torch.compile, store them for speedups"
    )
    s.add_argument("task")
    eval_opts(s)
    s.add_argument(
        "--variants", nargs="+", help="reference, compile, compile-max-autotune (default: all)"
    )
    s.set_defaults(func=cmd_baseline)

    from cockpit.cli import agents, loop, report, tui  # cheap: each imports its work lazily

    loop.register(sub)  # run, demo, resume, ls, status, stop, send
    agents.register_models(sub)  # models
    tui.register_tui(sub)  # attach, replay
    report.register_report(sub)  # report, export
    return p


def _damaged_session(exc: BaseException) -> str | None:
    """One line for a session folder that cannot be used (`SessionDamaged`, or a read of the
    record failing on a damaged page after it opened), naming the file; None for anything else."""
    import sqlite3

    from cockpit.store import record

    if isinstance(exc, record.SessionDamaged):
        return str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and record.last_opened is not None:
        return str(record.RecordUnreadable(record.last_opened, str(exc)))
    return None


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        sys.stderr.write(f"cockpit: error: {exc}\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - only a damaged session folder is caught here
        line = _damaged_session(exc)
        if line is None:
            raise
        sys.stderr.write(f"cockpit: error: {line}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("cockpit: interrupted\n")
        return 130
