"""Kernel body time (CUPTI, torch.profiler) of seed variants per shape, L2 flushed before each call."""
import sys, json, statistics
from pathlib import Path
sys.path.insert(0, "bench")
import torch
from benchlib import load_module, load_variant
from cockpit.harness.task import load_task

task = load_task(sys.argv[1]); out = sys.argv[2]
shapes = [dict(kv.split("=") for kv in s.split(",")) for s in sys.argv[3].split(";")]
names = sys.argv[4:]
ref = load_module(task.reference_path, "kp_ref")
flush = torch.empty(256 << 18, dtype=torch.float32, device="cuda")
res = []
for sh in shapes:
    p = {"rows": int(sh["rows"]), "cols": int(sh["cols"]), "dtype": sh["dtype"]}
    inputs = tuple(ref.make_inputs(p, 11, "cuda"))
    fns = {"copy": lambda *a: a[0].clone()}
    for n in names:
        fns[n] = load_variant(task.seeds_dir, n).kernel
    for n, fn in fns.items():
        for _ in range(20):
            fn(*inputs)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(300):
                flush.zero_()
                fn(*inputs)
            torch.cuda.synchronize()
        evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        evs.sort(key=lambda e: e.time_range.start)
        calls, cur = [], []
        for e in evs:
            if "fill" in e.name.lower() or "zero" in e.name.lower():
                if cur: calls.append(cur); cur = []
            else:
                cur.append(e)
        if cur: calls.append(cur)
        body = [sum(e.time_range.elapsed_us() for e in c) for c in calls]
        span = [c[-1].time_range.end - c[0].time_range.start for c in calls]
        kn = sorted({e.name[:40] for c in calls for e in c})
        row = {"shape": sh, "seed": n, "calls": len(calls), "body_med_us": statistics.median(body),
               "span_med_us": statistics.median(span), "kernels": kn}
        res.append(row)
        print(f"{sh['rows']}x{sh['cols']} {sh['dtype']:9s} {n:60s} body {row['body_med_us']:7.2f} span {row['span_med_us']:7.2f} n={len(calls)} {kn}", flush=True)
Path(out).write_text(json.dumps(res, indent=1))
