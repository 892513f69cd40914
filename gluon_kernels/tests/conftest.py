"""One Triton cache for all gluon_kernels tests (the repo's conftest gives each test its own): an attention
kernel takes seconds to compile, and the no-spill and PTX checks reuse the builds of the compile tests."""

import pytest


@pytest.fixture(scope="session")
def gluon_triton_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("gluon-triton-cache")


@pytest.fixture(autouse=True)
def triton_cache(gluon_triton_cache, monkeypatch):
    """Overrides the repo-wide fixture of the same name for this folder."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(gluon_triton_cache))
    return gluon_triton_cache
