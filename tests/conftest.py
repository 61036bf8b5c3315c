"""Test-wide environment. TRITON_INTERPRET must be set before any @triton.jit runs (the
interpreter is how Triton kernels execute on a CPU-only machine)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _data_dir(tmp_path_factory):
    """Ceilings, baselines and caches go to a per-run folder, never the user's home."""
    path = tmp_path_factory.mktemp("cockpit-data")
    old = os.environ.get("COCKPIT_DATA_DIR")
    os.environ["COCKPIT_DATA_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("COCKPIT_DATA_DIR", None)
    else:
        os.environ["COCKPIT_DATA_DIR"] = old
