"""One Triton cache for all gluon_kernels tests (the repo's conftest gives each test its own): an attention
kernel takes seconds to compile, and the no-spill and PTX checks reuse the builds of the compile tests. Under
pytest-xdist the workers share it too (Triton writes cache entries atomically), so a configuration compiled by one
worker is not compiled again by the other."""

import os

import pytest


@pytest.fixture(scope="session")
def gluon_triton_cache(tmp_path_factory):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # basetemp is per worker; its parent is the run's
        shared = tmp_path_factory.getbasetemp().parent / "gluon-triton-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("gluon-triton-cache")


@pytest.fixture(autouse=True)
def triton_cache(gluon_triton_cache, monkeypatch):
    """Overrides the repo-wide fixture of the same name for this folder."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(gluon_triton_cache))
    return gluon_triton_cache
