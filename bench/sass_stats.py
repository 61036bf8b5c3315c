"""Compile one Triton kernel for a GPU that is not here and count what its machine code does.

    python bench/sass_stats.py kernels/qr/seeds/triton_fused.py _panel_reg \\
        --const MPP=1 MB=512 NBP=32 --div S H V T TAU n k v_bs m --warps 16

Compiles for sm_90 (H100/H200) on any machine (Triton ships ptxas; no GPU or driver needed),
then prints registers, stack (spills), shared memory and, for every loop of the SASS (a backward
branch), its instruction count, barriers, shuffles, shared and local memory operations and
special-function (MUFU) instructions. Pointers (capitalized names and names ending in `_ptr`)
are `*fp32` unless --sig says otherwise; other arguments are `i32`. --div marks arguments the
launcher would specialize as divisible by 16 (pointers from the caching allocator, sizes like
n = 512): without it, Triton assumes nothing and picks another layout, so match the launch you
care about. --sass writes the machine code, to read where ptxas put the loads.

Why: the QR seeds' register panel is issue-bound on a GPU:
its time follows the loop's instruction count (about as much slower as it has more instructions)
and not its barrier count. This is the cheap proxy to iterate on without a GPU; a GPU run decides.
Prints a table and, with --json, writes the numbers to a file; --ptx writes the PTX (to read
what a kernel asks of the memory model: `atom...release`, `ld...acquire`, `ld.global.cg`).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import triton
from benchlib import load_module
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

COUNT = {
    "instructions": None,
    "BAR": "BAR.SYNC",
    "SHFL": "SHFL",
    "STS": "STS",
    "LDS": "LDS",
    "STL": "STL",
    "LDL": "LDL",
    "MUFU": "MUFU",
    "LDG": "LDG",
    "STG": "STG",
}


def _bin(name: str) -> str:
    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def load_kernel(path: Path, name: str):
    return getattr(load_module(path, f"sass_{path.stem}"), name)


def _value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def compile_kernel(fn, consts: dict, div: set[str], sig: dict, warps: int, arch: int = 90):
    signature = {}
    for arg in fn.arg_names:
        if arg in consts:
            signature[arg] = "constexpr"
        elif arg in sig:
            signature[arg] = sig[arg]
        elif arg[:1].isupper() or arg.endswith("_ptr"):
            signature[arg] = "*fp32"
        else:
            signature[arg] = "i32"
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if a in div}
    src = ASTSource(fn=fn, signature=signature, constexprs=dict(consts), attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps})


def resources(cubin: bytes, tmp: Path) -> dict:
    f = tmp / "k.cubin"
    f.write_bytes(cubin)
    out = subprocess.run(
        [_bin("cuobjdump"), "-res-usage", str(f)], capture_output=True, text=True, check=True
    ).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", out)
    res = dict(zip(("regs", "stack", "shared", "local"), map(int, m.groups()))) if m else {}
    sass = subprocess.run(
        [_bin("cuobjdump"), "-sass", str(f)], capture_output=True, text=True, check=True
    ).stdout
    return res, sass


def instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction) of every SASS instruction, in order."""
    found = (re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", line) for line in sass.splitlines())
    return [(int(m.group(1), 16), m.group(2)) for m in found if m]


def counts(start: str, end: str, body: list[str]) -> dict:
    """A row of the table: COUNT's operations among `body`'s instructions."""
    row = {"start": start, "end": end}
    for key, op in COUNT.items():
        row[key] = len(body) if op is None else sum(op in i for i in body)
    return row


def loops(sass: str) -> list[dict]:
    """One entry per backward branch: the instructions between its target and itself."""
    instrs = instructions(sass)
    out = []
    for addr, ins in instrs:
        m = re.search(r"BRA (?:`\(.*?\) )?0x([0-9a-f]+)", ins)
        if m and int(m.group(1), 16) < addr:
            start = int(m.group(1), 16)
            body = [i for a, i in instrs if start <= a <= addr]
            out.append(counts(hex(start), hex(addr), body))
    return out


def whole(sass: str) -> dict:
    """The counts of `loops` over the whole kernel (a kernel with no loop still has a row)."""
    return counts("all", "", [i for _, i in instructions(sass)])


def memory_widths(sass: str) -> dict[str, int]:
    """Global loads and stores by opcode with its width suffix (LDG.E.128 is a 16-byte vector
    load, LDG.E.U16 a 2-byte one): whether a kernel's accesses were vectorized."""
    out: dict[str, int] = {}
    for m in re.finditer(r"\b((?:LDG|STG)(?:\.[A-Z0-9_]+)*)", sass):
        op = ".".join(p for p in m.group(1).split(".") if p not in ("EF", "EL", "LU", "STRONG"))
        out[op] = out.get(op, 0) + 1
    return dict(sorted(out.items()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file", type=Path)
    p.add_argument("kernel")
    p.add_argument("--const", nargs="*", default=[], help="NAME=VALUE constexpr arguments")
    p.add_argument("--div", nargs="*", default=[], help="arguments divisible by 16")
    p.add_argument("--sig", nargs="*", default=[], help="NAME=TYPE, e.g. X=*bf16 n=i64")
    p.add_argument("--warps", type=int, default=4)
    p.add_argument("--arch", type=int, default=90)
    p.add_argument("--json", type=Path)
    p.add_argument("--ptx", type=Path, help="also write the PTX here (memory-order qualifiers)")
    p.add_argument("--sass", type=Path, help="also write the SASS here (the order of its loads)")
    args = p.parse_args()
    consts = {k: _value(v) for k, v in (c.split("=", 1) for c in args.const)}
    sig = dict(s.split("=", 1) for s in args.sig)
    try:
        fn = load_kernel(args.file, args.kernel)
        k = compile_kernel(fn, consts, set(args.div), sig, args.warps, args.arch)
    except Exception as exc:  # a compile error is the answer, in one line
        why = " ".join(str(exc).split())
        print(f"sass_stats: cannot compile {args.kernel}: {type(exc).__name__}: {why}"[:400])
        sys.exit(1)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        res, sass = resources(k.asm["cubin"], Path(tmp))
    found = loops(sass)
    kernel_row = whole(sass)
    total = kernel_row["instructions"]
    print(
        f"{args.kernel} sm_{args.arch} {args.warps} warps: regs {res.get('regs')}, stack "
        f"{res.get('stack')} B, shared {k.metadata.shared} B, "
        f"{total} instructions in all"
    )
    widths = memory_widths(sass)
    if widths:
        print("global memory: " + ", ".join(f"{k} x{v}" for k, v in widths.items()))
    print("loop            " + " ".join(f"{c:>12s}" for c in COUNT))
    for row in [kernel_row, *found]:
        print(f"{row['start']}-{row['end']:<8s} " + " ".join(f"{row[c]:12d}" for c in COUNT))
    if args.ptx:
        args.ptx.write_text(k.asm["ptx"])
    if args.sass:
        args.sass.write_text(sass)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"resources": res, "all": kernel_row, "loops": found, "memory": widths}, indent=1
            )
        )


if __name__ == "__main__":
    main()
