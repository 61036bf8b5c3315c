import statistics, sys, torch
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
from benchlib import load_variant, time_calls
from pathlib import Path
for task in ["softmax", "rmsnorm"]:
    seeds = Path(f"kernels/{task}/seeds")
    names = ["triton_tiled", "triton_tiled:LOOP_BLOCK=0"] if task == "softmax" else ["triton_tiled", "triton_tiled:WIDE_LOOP_BLOCK=0"]
    fns = {n: load_variant(seeds, n).kernel for n in names}
    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    for rows, cols, dt in [(2048, 65536, torch.float32), (1024, 65536, torch.float32), (264, 65536, torch.bfloat16), (300, 65536, torch.float32), (4096, 65536, torch.bfloat16)]:
        ins = [(torch.randn(rows, cols, device="cuda", dtype=dt),) for _ in range(2)]
        if task == "rmsnorm":
            ins = [(x, torch.randn(cols, device="cuda", dtype=dt)) for (x,) in ins]
        t = time_calls(lambda x, *_: x.clone(), ins, 100, 1.0, flush)
        copy = statistics.median(t)
        for n, f in fns.items():
            out = f(*ins[0])
            if task == "softmax":
                ref = torch.softmax(ins[0][0].float(), -1)
            else:
                x, w = ins[0]; xf = x.float(); ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
            err = (out.float() - ref).abs().max().item()
            t = time_calls(f, ins, 100, 1.0, flush)
            print(f"{task:8s} {rows}x{cols} {str(dt)[6:]:9s} {n[:60]:60s} {statistics.median(t):8.1f} us  copy {copy:7.1f}  {100*copy/statistics.median(t):5.1f}%  maxerr {err:.2e}", flush=True)
        del ins
