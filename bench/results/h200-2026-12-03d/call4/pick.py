"""Decide PDL_EARLY for softmax from call 4's direct run: on if both spellings of it beat both
spellings of the default on 17 x 131073 bf16 (mean of the two) and it is not slower on the
other split-path shapes. Prints the decision; exit 0 = on, 1 = off."""
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"] if "rows" in d else d
med = {}
for r in rows:
    if not isinstance(r, dict) or r.get("median_us") is None:
        continue
    med[(r["shape"], r["seed"])] = r["median_us"]
shapes = sorted({s for s, _ in med})
ok = True
for s in shapes:
    base = [med.get((s, k)) for k in ("triton_tiled", "triton_tiled:HEAD_TAIL=1")]
    early = [med.get((s, k)) for k in ("triton_tiled:PDL_EARLY=1", "triton_tiled:PDL_EARLY=1,HEAD_TAIL=1")]
    if None in base or None in early:
        print("missing", s, base, early); ok = False; continue
    b, e = sum(base) / 2, sum(early) / 2
    print(f"{s}: default {base} early {early} -> {e - b:+.2f} us")
    if "131073" in s and not e < b - 0.1:
        ok = False
    if e > b * 1.01:
        ok = False
print("PDL_EARLY on" if ok else "PDL_EARLY stays off")
sys.exit(0 if ok else 1)
