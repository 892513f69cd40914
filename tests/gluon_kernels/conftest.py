"""The bundled kernels' tests compile into one Triton cache shared with tests/test_golden_ptx.py and across the
pytest-xdist workers (`kernel_builds` in the repository's conftest), instead of a fresh cache per test: an attention
kernel takes seconds to compile, and the compile, no-spill, PTX and golden checks build many of the same
configurations."""

import pytest


@pytest.fixture(autouse=True)
def triton_cache(kernel_builds):
    """Overrides the repo-wide fixture of the same name for this folder."""
    return kernel_builds
