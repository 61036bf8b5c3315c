"""OS protections for the candidate's process: scrubbed environment, no network, Landlock file
rules, resource limits. Each is detected, applied where the OS allows, and recorded, so a result
says which protections were really active.

Linux only for the kernel features; elsewhere every protection reports itself unavailable.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
from pathlib import Path

# Variables the candidate's process keeps; everything else (provider keys, secret seeds, the
# engine's configuration) is dropped before it starts.
KEEP_ENV = {
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "TRITON_PTXAS_PATH",
    "TRITON_CUOBJDUMP_PATH",
    "TRITON_NVDISASM_PATH",
}


def scrubbed_env(workdir: Path, cache_dir: Path, device: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    # the interpreter's own bin first: an environment's tools (ninja, which load_inline runs)
    # are found whether or not it was activated
    here = os.path.dirname(sys.executable)
    path = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != here]
    env["PATH"] = os.pathsep.join([here, *path])
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        TRITON_CACHE_DIR=str(cache_dir / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(cache_dir / "inductor"),
        TORCHINDUCTOR_COMPILE_THREADS="1",  # no compile worker pool: threads stay countable
        CUDA_CACHE_PATH=str(cache_dir / "nv"),
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
        # one intra-op thread: on a shared machine (parallel workers, CI's pytest -n) OpenMP's
        # spinning workers turn a few-microsecond call into hundreds, in its timing and in the
        # CPU time the judge's clock reads
        env["OMP_NUM_THREADS"] = "1"
        # freed memory stays with the process: a burst's outputs do not page-fault afresh each
        # time (glibc would otherwise return them to the system and fault them back in)
        env["MALLOC_TRIM_THRESHOLD_"] = str(1 << 30)
        env["MALLOC_MMAP_THRESHOLD_"] = str(32 << 20)
    return env


# --- network ------------------------------------------------------------------------------------
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def drop_network() -> str:
    """Move this process into a fresh network namespace (loopback down, nothing else)."""
    if not sys.platform.startswith("linux"):
        return "unavailable: not Linux"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) == 0:
        return "netns"
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        try:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError:
            pass
        return "userns+netns"
    return f"unavailable: unshare failed (errno {ctypes.get_errno()})"


# --- Landlock -----------------------------------------------------------------------------------
_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446  # x86_64 and aarch64 share these numbers
_FS_EXECUTE, _FS_WRITE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_ALL_V1 = (1 << 13) - 1
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2
_PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    v = libc.syscall(_SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return int(v) if v > 0 else 0


def apply_landlock(read_paths: list[str], write_paths: list[str]) -> str:
    """Allow reading (and executing) under `read_paths`, everything under `write_paths`, and
    nothing else on the file system; deny all TCP where the ABI supports it (v4+).

    The task folder, the reference and the judge's files are outside both lists, so the candidate
    cannot open them even by absolute path.
    """
    abi = landlock_abi()
    if abi < 1:
        return "unavailable: Landlock not supported by this kernel"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fs_all = _FS_ALL_V1
    if abi >= 2:
        fs_all |= _FS_REFER
    if abi >= 3:
        fs_all |= _FS_TRUNCATE
    if abi >= 5:
        fs_all |= _FS_IOCTL_DEV
    attr = _RulesetAttr(fs=fs_all, net=0, scoped=0)
    size = 8
    if abi >= 4:
        attr.net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_SIGNAL  # no signals to processes outside the sandbox
        size = 24
    fd = libc.syscall(_SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        return f"unavailable: landlock_create_ruleset errno {ctypes.get_errno()}"
    read_rights = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
    added = 0
    try:
        for paths, rights in ((read_paths, read_rights), (write_paths, fs_all)):
            for p in dict.fromkeys(paths):
                if not os.path.exists(p):
                    continue
                try:
                    pfd = os.open(p, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights
                    if not os.path.isdir(p):  # file rules accept file rights only
                        allowed &= (
                            _FS_EXECUTE | _FS_WRITE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
                        )
                    rule = _PathBeneath(allowed=allowed, parent_fd=pfd)
                    if (
                        libc.syscall(
                            _SYS_ADD,
                            ctypes.c_int(fd),
                            ctypes.c_int(1),
                            ctypes.byref(rule),
                            ctypes.c_uint32(0),
                        )
                        == 0
                    ):
                        added += 1
                finally:
                    os.close(pfd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"unavailable: no_new_privs errno {ctypes.get_errno()}"
        if libc.syscall(_SYS_RESTRICT, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"unavailable: landlock_restrict_self errno {ctypes.get_errno()}"
    finally:
        os.close(fd)
    return f"landlock abi {abi} ({added} rules)"


def default_read_paths(exclude: list[str]) -> list[str]:
    """What an imported torch/triton needs to keep working: the interpreter, site-packages, system
    libraries and compilers (Triton and inductor build small modules), devices and /proc."""
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        "/usr",
        "/lib",
        "/lib64",
        "/bin",
        "/sbin",
        "/etc",
        "/opt",
        "/proc",
        "/sys",
        "/run",
        "/var/lib",
    ]
    candidates += [p for p in sys.path if p and os.path.isdir(p)]
    excl = [os.path.realpath(e) for e in exclude]
    out = []
    for c in candidates:
        rc = os.path.realpath(c)
        # a path that would expose an excluded folder (the project, with its tasks) is dropped
        if any(e == rc or e.startswith(rc + os.sep) for e in excl):
            continue
        out.append(rc)
    return out


def set_limits(memory_bytes: int | None, cpu_seconds: int | None) -> dict[str, str]:
    applied = {}
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        applied["core"] = "0"
    except (ValueError, OSError):
        pass
    if memory_bytes:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            applied["address_space"] = f"{memory_bytes >> 20} MiB"
        except (ValueError, OSError) as exc:
            applied["address_space"] = f"unavailable: {exc}"
    if cpu_seconds:
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
            applied["cpu_time"] = f"{cpu_seconds} s"
        except (ValueError, OSError) as exc:
            applied["cpu_time"] = f"unavailable: {exc}"
    return applied
