"""Pick softmax's looped-path defaults from a direct run: the variant with the best geomean over
the 65536-column shapes, if it beats the default (both spellings' mean) by 2%; rewrite them."""
import json, math, re, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["rows"] if r.get("median_us") and r["seed"] != "copy" and r["check"] == "ok"]
by = {}
for r in rows:
    by.setdefault(r["seed"], []).append(r["median_us"])
g = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in by.items() if len(v) == len(by["triton_tiled"])}
base = (g["triton_tiled"] + g.get("triton_tiled:HEAD_TAIL=1", g["triton_tiled"])) / 2
best = min(g, key=g.get)
print({k: round(v, 2) for k, v in g.items()}, "base", round(base, 2), "best", best)
if best.startswith("triton_tiled:") and g[best] < 0.98 * base and "HEAD_TAIL" not in best:
    p = "kernels/softmax/seeds/triton_tiled.py"
    s = open(p).read()
    for kv in best.split(":", 1)[1].split(","):
        k, v = kv.split("=")
        s, n = re.subn(rf"^{k} = \S+", f"{k} = {v}", s, count=1, flags=re.M)
        print("set", k, v, n)
    open(p, "w").write(s)
