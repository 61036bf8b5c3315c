"""Write the fastest passing variant of a seed from a qr_direct.json (or a direct-TASK.json of
bench/direct.py) into a copy of the seed.

    python bench/pick_variant.py $OUT/qr_direct.json triton_fused $OUT/picked/triton_fused.py
    python bench/pick_variant.py $OUT/direct-softmax.json triton_tiled $OUT/picked/triton_tiled.py

Looks at rows whose seed is STEM or STEM:KEY=VAL,...; a variant counts only if it passed the
check on every spec it ran and ran every spec the plain seed ran; the lowest geometric mean wins.
The copy gets `KEY = VAL` assignments appended (the module's own constants, overridden the same
way qr_direct overrode them), so the harness can evaluate exactly the variant that won. Prints
the winner and the table it chose from.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pick(doc: dict, stem: str) -> tuple[str, dict[str, float]]:
    per: dict[str, dict[str, float]] = {}
    bad: set[str] = set()
    for r in doc["rows"]:
        name = r["seed"]
        if name != stem and not name.startswith(stem + ":"):
            continue
        if r.get("check") != "ok" or not r.get("median_us"):
            bad.add(name)
            continue
        per.setdefault(name, {})[r.get("label") or r["shape"]] = r["median_us"]
    full = len(per.get(stem, {}))
    geo = {
        name: math.exp(sum(math.log(v) for v in d.values()) / len(d))
        for name, d in per.items()
        if name not in bad and len(d) >= full
    }
    if not geo:
        raise SystemExit(f"no passing variant of {stem} in the file")
    return min(geo, key=geo.get), geo


def main() -> None:
    src_json, stem, dest = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    doc = json.loads(src_json.read_text())
    best, geo = pick(doc, stem)
    for name, g in sorted(geo.items(), key=lambda kv: kv[1]):
        print(f"{'*' if name == best else ' '} {name:50s} {g / 1e3:8.3f} ms")
    text = (ROOT / "kernels" / doc.get("task", "qr") / "seeds" / f"{stem}.py").read_text()
    _, _, overrides = best.partition(":")
    lines = []
    for item in filter(None, overrides.split(",")):
        key, _, value = item.partition("=")
        lines.append(f"{key} = {literal(text, key, value)}")
    if lines:
        text += "\n\n# variant picked by bench/pick_variant.py\n" + "\n".join(lines) + "\n"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    print(f"wrote {dest} ({best})")


def literal(text: str, key: str, value: str) -> str:
    """VALUE written as the type of the constant's first assignment in the seed (qr_direct's
    rule: bools and ints through int())."""
    for line in text.splitlines():
        if line.startswith(f"{key} = "):
            old = line.split("=", 1)[1].split("#")[0].strip()
            if old in ("True", "False"):
                return repr(bool(int(value)))
            if old.lstrip("-").split()[0].isdigit():
                return repr(int(value))
            return repr(value)
    raise SystemExit(f"{key} is not a module constant of the seed")


if __name__ == "__main__":
    main()
