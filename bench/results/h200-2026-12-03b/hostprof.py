"""Host time per call of the triton_tiled seeds (no hold, no flush): where the submit goes."""
import cProfile, pstats, io, statistics, sys, time, json, os
from pathlib import Path
import torch
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench")); sys.path.insert(0, str(ROOT))
from benchlib import load_module
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
res = {}
shapes = [(17, 131073), (1, 4099), (8192, 8192), (2048, 65536), (3, 17)]
for task in ("rmsnorm", "softmax"):
    mod = load_module(ROOT / f"kernels/{task}/seeds/triton_tiled.py", f"s_{task}")
    for dt in (torch.bfloat16, torch.float32):
        for r, c in shapes:
            x = torch.randn(r, c, device="cuda", dtype=dt)
            args = (x, torch.randn(c, device="cuda", dtype=dt)) if task == "rmsnorm" else (x,)
            for _ in range(20):
                mod.kernel(*args)
            torch.cuda.synchronize()
            ts = []
            for _ in range(300):
                torch.cuda.synchronize()
                t0 = time.perf_counter_ns(); mod.kernel(*args); ts.append((time.perf_counter_ns() - t0) / 1e3)
            ts.sort()
            key = f"{task} {r}x{c} {str(dt)[6:]}"
            res[key] = {"p10": ts[30], "med": ts[150], "p90": ts[270]}
            print(key, res[key], flush=True)
            if (r, c) in ((17, 131073), (1, 4099)) and dt == torch.bfloat16:
                pr = cProfile.Profile(); pr.enable()
                for _ in range(200):
                    mod.kernel(*args)
                pr.disable(); torch.cuda.synchronize()
                s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
                (out / f"prof-{task}-{r}x{c}.txt").write_text(s.getvalue())
(out / "hostprof.json").write_text(json.dumps(res, indent=1))
