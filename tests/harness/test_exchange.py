"""The memfd exchange (the default; `cockpit eval --exchange files` is the other):
two sealed shared-memory regions instead of one file per tensor. The bytes are the same and so are the
checks; what must hold is that the other side, which runs candidate code, can neither make the
judge read outside a region nor pull the region out from under the judge's mapping."""

from __future__ import annotations

import fcntl
import os
import re

import pytest
import torch
from judge_helpers import ADVERSARIAL, KERNELS, describe, run_judge, task_for
from test_exploits import EXPECTED, _matching

from cockpit.harness import wire


def _pair() -> tuple[wire.Region, wire.Region]:
    """The writer's region and a reader on the same memfd, as the judge and the arena hold it."""
    w = wire.Region()
    return w, wire.Region(fd=os.dup(w.fd))


def test_tensors_of_every_kind_cross_and_the_reader_gets_its_own_copy() -> None:
    w, r = _pair()
    tensors = [
        torch.randn(3, 5),
        torch.randn(4, 7).to(torch.bfloat16),
        torch.randn(2, 3, dtype=torch.float64),
        torch.tensor([True, False, True]),
        torch.arange(10, dtype=torch.int64),
        torch.empty(0, 4),
        torch.randn(5, 4).t(),  # not contiguous: sent contiguous, said so in the meta
        torch.randn(1 << 19),  # 2 MiB: grows the region past its first size, then remaps
    ]
    metas = [w.pack(t) for t in tensors]
    offsets = [m["region"][0] for m in metas]
    assert offsets == sorted(offsets) and all(o % wire.REGION_ALIGN == 0 for o in offsets)
    assert metas[6]["contiguous"] is False
    got = [r.unpack(m) for m in metas]
    for t, g in zip(tensors, got):
        assert g.dtype == t.dtype and g.shape == t.shape and torch.equal(g, t.contiguous())
    w.reset()
    w.pack(torch.zeros(3, 5))  # the next request overwrites the region from offset 0 ...
    assert torch.equal(got[0], tensors[0])  # ... and what was read before is unaffected


def test_the_region_cannot_be_truncated_or_resealed_by_the_other_side() -> None:
    w, r = _pair()
    w.pack(torch.randn(1000))
    with pytest.raises(PermissionError):
        os.ftruncate(r.fd, 0)  # a truncated mapping would SIGBUS the judge
    with pytest.raises(PermissionError):
        fcntl.fcntl(r.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)  # would block the judge's writes
    os.ftruncate(r.fd, os.fstat(r.fd).st_size + 4096)  # growing is allowed (the writer grows it)


def test_an_unsealed_memfd_is_refused() -> None:
    fd = os.memfd_create("not-sealed", os.MFD_CLOEXEC)
    with pytest.raises(wire.WireError, match="not sealed"):
        wire.Region(fd=fd)
    os.close(fd)


@pytest.mark.parametrize(
    "forge, message",
    [
        (lambda m: m.update(region="0"), "malformed region"),
        (lambda m: m.update(region=[0]), "malformed region"),
        (lambda m: m.update(region=[-64, 40]), "malformed region"),
        (lambda m: m.update(region=[True, 40]), "malformed region"),
        (lambda m: m.update(region=[1 << 40, 40]), "past the region"),
        (lambda m: m.update(region=[0, 44]), "holds 44 bytes, its shape needs 40"),
        (lambda m: m.update(dtype="object"), "unknown dtype"),
        (lambda m: m.update(shape=[2, -5]), "malformed tensor shape"),
    ],
)
def test_a_forged_reference_is_a_wire_error(forge, message) -> None:
    w, r = _pair()
    meta = w.pack(torch.randn(10))
    forge(meta)
    with pytest.raises(wire.WireError, match=re.escape(message)):
        r.unpack(meta)


def test_a_seed_passes_through_the_memfd_exchange_as_through_files() -> None:
    seed = KERNELS / "softmax" / "seeds" / "torch_eager.py"
    res = run_judge("softmax", seed)  # the default
    assert res.status == "ok", describe(res)
    assert res.breakdown_s["verify"]["request"] > 0
    assert res.protections["exchange"] == "memfd (sealed against shrinking)"
    files = run_judge("softmax", seed, exchange="files")
    assert files.status == "ok", describe(files)
    assert files.protections["exchange"] == "files"


TRUNCATE = '''"""At every call, tries to pull the exchange regions out from under the judge (ftruncate to
0 while they hold data: a shrunk mapping would SIGBUS the judge) and to seal them against the
judge's writes; then computes softmax honestly. The attempts must fail with EPERM (sealed), so the
verdict is ok."""
import fcntl
import os
import torch

_fds = []
for fd in range(3, 256):
    try:
        if "memfd:cockpit" in os.readlink(f"/proc/self/fd/{fd}"):
            _fds.append(fd)
    except OSError:
        pass


def kernel(x):
    seen = []
    for fd in _fds:
        if os.fstat(fd).st_size == 0:
            continue
        for name, attack in (("shrink", lambda: os.ftruncate(fd, 0)),
                             ("seal", lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE))):
            try:
                attack()
                seen.append(f"{name} worked")
            except OSError as exc:
                seen.append(f"{name} {type(exc).__name__}")
    print("exchange attempts:", len(_fds), seen, flush=True)
    return torch.softmax(x, -1)
'''


def test_a_candidate_that_truncates_the_regions_gets_nowhere(tmp_path) -> None:
    path = tmp_path / "truncate_regions.py"
    path.write_text(TRUNCATE)
    res = run_judge("softmax", path, exchange="memfd", static=False)
    assert res.status == "ok", describe(res)
    # the regions that exist at import: the judge's and the arena's (and the null bursts' inputs)
    lines = [
        ln for ln in res.log_tail.splitlines()
        if re.match(r"exchange attempts: [2-9] ", ln)
    ]
    assert lines, res.log_tail[-500:]
    assert not any("worked" in ln for ln in lines), lines
    assert any("shrink PermissionError" in ln and "seal PermissionError" in ln for ln in lines)


SUBSET = [
    "pointer_replay.py",
    "content_replay.py",
    "call_counting.py",
    "uninitialized_output.py",
    "input_mutation.py",
    "output_aliasing.py",
    "spotcheck_dodge.py",
    "exit_during_call.py",
]


@pytest.mark.parametrize("name", SUBSET)
def test_exploits_get_the_same_verdict_through_the_file_exchange(name) -> None:
    """The whole library runs through the default (memfd) in test_exploits; these through files."""
    status, kinds, pattern = EXPECTED[name]
    kinds = (kinds,) if isinstance(kinds, str) else kinds
    res = run_judge(task_for(name), ADVERSARIAL / name, static=False, exchange="files")
    assert res.status == status, describe(res)
    assert _matching(res, kinds, pattern), describe(res)
