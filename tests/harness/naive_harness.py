"""A deliberately naive kernel harness, to show that each adversarial candidate is a *working*
exploit: every mistake below is one the real harness is built to avoid.

    python naive_harness.py softmax|qr FILE...   ->  one JSON line per file on stdout

torch is imported once; each candidate runs in a forked child (torch has not started any thread
pool in the parent, and nothing here touches CUDA). The child makes every naive choice at once:

  * the candidate is imported into the process that checks and times it;
  * the first call is checked, later calls are only timed, on one reused input, with
    `time.perf_counter` read in the same process;
  * the check runs after the timing loop and a pause, with `torch.allclose` in that process;
  * the output gate is `isinstance(out, torch.Tensor)`; inputs are never re-checked;
  * only one public shape is verified; flags, threads and the forbidden list are not looked at;
  * the verdict is the first JSON line with a "status" key on the child's stdout, and a child that
    exits with code 0 without any verdict line is taken as a pass.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import sys
import time

import torch  # noqa: F401  (imported before forking: the children share it)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _softmax_check(kernel) -> dict:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 128, generator=g) * 2 + (torch.rand(32, 1, generator=g) - 0.5) * 200
    want = torch.softmax(x.double(), dim=-1)
    x_timed = x.clone()
    out = kernel(x)  # the checked call
    assert isinstance(out, torch.Tensor), "output is not a tensor"
    kernel(x_timed)  # warm-up
    t0 = time.perf_counter()
    for _ in range(20):
        kernel(x_timed)
    us = (time.perf_counter() - t0) / 20 * 1e6
    time.sleep(0.1)  # "computing the reference": a late writer has finished by now
    ok = torch.allclose(out.double(), want, atol=1e-6, rtol=1e-5)
    return {"status": "ok" if ok else "wrong", "us": us}


def _qr_check(kernel) -> dict:
    ref = _load(os.path.join(ROOT, "kernels", "qr", "reference.py"), "naive_qr_reference")
    (a,) = ref.make_inputs({"batch": 4, "n": 16, "cond": 2, "family": "mixed"}, 0, "cpu")
    out = kernel(a.clone())
    ok, metrics = ref.check((a,), tuple(out))
    return {"status": "ok" if ok else "wrong", "message": metrics.get("message", "")}


def _child(task: str, path: str, wfd: int) -> None:
    os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        module = _load(path, "candidate")
        result = (_qr_check if task == "qr" else _softmax_check)(module.kernel)
    except BaseException as exc:  # noqa: BLE001 - any failure is the naive harness's verdict
        result = {"status": "error", "message": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps(result), flush=True)
    os.close(wfd)


def _run(task: str, path: str, timeout: float = 60.0) -> dict:
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: stdout goes into the pipe
        os.close(rfd)
        os.dup2(wfd, 1)
        code = 0
        try:
            _child(task, path, wfd)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(wfd)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([rfd], [], [], 0.5)
        if not ready:
            continue
        data = os.read(rfd, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(rfd)
    status = None
    for _ in range(int(timeout * 10)):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return {"status": "timeout"}
    lines = b"".join(chunks).decode("utf-8", "replace").splitlines()
    for line in lines:  # naive: the first verdict-looking line wins
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and "status" in msg:
            return msg
    code = os.waitstatus_to_exitcode(status)
    return {"status": "ok" if code == 0 else "crash", "exit_code": code}


def main() -> None:
    task, files = sys.argv[1], sys.argv[2:]
    for path in files:
        print(json.dumps({"file": os.path.basename(path), **_run(task, path)}), flush=True)


if __name__ == "__main__":
    main()
