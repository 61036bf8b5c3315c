"""A real local Ray cluster for the ray backend's tests: a head with no CPU slot (it schedules
nothing) and worker node processes that each test adds and removes, started in this process and
stopped afterwards, leaving no process behind. Its fixtures `cluster` (one per test module) and
`nodes` reach the tests through conftest.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import psutil
import pytest
from engine_helpers import COCKPIT, REPO_ROOT, Cockpit

ARENA = "cockpit.harness.arena"
NO_RAY = "cockpit: error: --backend ray needs Ray, which is not installed: pip install -e '.[ray]'"


def cockpit_without_ray(cockpit: Cockpit, *args: str) -> subprocess.CompletedProcess:
    """The CLI with `args` in a process where `import ray` fails exactly as where Ray is not
    installed."""
    hide = "import sys; sys.modules['ray'] = None; " + COCKPIT[-1].removeprefix("import sys; ")
    return subprocess.run(
        [sys.executable, "-c", hide, *args],
        capture_output=True,
        text=True,
        env=cockpit.env(),
        cwd=cockpit.cwd,
        timeout=120,
    )


class LocalCluster:
    """A Ray head (no CPU: it schedules nothing) and worker nodes of one CPU slot each."""

    def __init__(self) -> None:
        from ray.cluster_utils import Cluster

        self.temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths
        # Ray writes the head's address to /tmp/ray/ray_current_cluster whatever the temp_dir,
        # and fails when that folder is missing (a fresh machine where no Ray ran yet)
        os.makedirs("/tmp/ray", exist_ok=True)
        self.seen: dict[int, psutil.Process] = {}
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "temp_dir": self.temp,
                # a killed node is declared dead in ~1.5 s instead of ~15 s
                "_system_config": {
                    "health_check_initial_delay_ms": 0,
                    "health_check_period_ms": 500,
                    "health_check_failure_threshold": 3,
                },
            },
        )

    @property
    def address(self) -> str:
        return self.cluster.address

    def add(self, num_cpus: int = 1, **resources) -> object:
        node = self.cluster.add_node(num_cpus=num_cpus, temp_dir=self.temp, **resources)
        self.cluster.wait_for_nodes()
        return node

    def raylet(self, node) -> psutil.Process:
        return psutil.Process(node.all_processes["raylet"][0].process.pid)

    def remember(self) -> None:
        for node in [self.cluster.head_node, *self.cluster.worker_nodes]:
            for infos in node.all_processes.values():
                for info in infos:
                    with contextlib.suppress(psutil.Error):
                        p = psutil.Process(info.process.pid)
                        for q in [p, *p.children(recursive=True)]:
                            self.seen.setdefault(q.pid, q)

    def arenas(self, node) -> list[psutil.Process]:
        """Candidate processes running under `node`: an evaluation in flight there."""
        out = []
        with contextlib.suppress(psutil.Error):
            for p in self.raylet(node).children(recursive=True):
                self.seen.setdefault(p.pid, p)
                with contextlib.suppress(psutil.Error):
                    if ARENA in " ".join(p.cmdline()):
                        out.append(p)
        return out

    def kill(self, node) -> None:
        self.remember()
        self.cluster.remove_node(node, allow_graceful=False)

    def clear(self) -> None:
        """Remove every worker node left: the next test starts from the head alone."""
        for node in list(self.cluster.worker_nodes):
            self.kill(node)

    def shutdown(self) -> list[psutil.Process]:
        """Stop every node; returns the processes of the cluster still alive 15 s later (killed)."""
        self.remember()
        try:
            self.cluster.shutdown()
        finally:
            _, alive = psutil.wait_procs(list(self.seen.values()), timeout=15)
            for p in alive:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            shutil.rmtree(self.temp, ignore_errors=True)
        return alive


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    pytest.importorskip("ray")
    old = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_USAGE_STATS_ENABLED")}
    # the nodes' workers import this checkout's cockpit, as the engine does
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO_ROOT), old["PYTHONPATH"]] if p)
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    c = LocalCluster()
    try:
        yield c
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        left = c.shutdown()
        assert not left, f"cluster processes left behind: {[p.pid for p in left]}"


@pytest.fixture
def nodes(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The cluster, its worker nodes (added by the test) removed afterwards: tests of this module
    may run in any order, on any xdist worker."""
    try:
        yield cluster
    finally:
        cluster.clear()
