"""tritonhook's C helpers (`_native`): built with the machine's real C compiler into the cache folder, loaded, and
refused clearly when the compiler is missing or fails."""
from __future__ import annotations

import pytest

from tritonhook import _native
from tritonhook.errors import TritonhookError


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_NATIVE_CACHE", str(tmp_path / "native"))
    _native.load.cache_clear()
    yield tmp_path / "native"
    _native.load.cache_clear()


def test_the_launch_path_is_built_into_the_cache_and_loads(fresh_cache):
    module = _native.load("_launchpath")
    built = list(fresh_cache.iterdir())
    assert len(built) == 1 and built[0].name.startswith("_launchpath-") and module.__file__ == str(built[0])
    seen = module.KernelSeen("spec")
    assert (seen.spec, seen.arity, seen.signatures, seen.by_arity) == ("spec", -1, None, {})
    signature = module.SignatureSeen()
    signature.pass_next = 3
    assert (signature.data, signature.pass_next, signature.passed) == (None, 3, 0)


def test_a_missing_or_failing_compiler_is_a_clear_error(fresh_cache, monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(TritonhookError, match=r"_launchpath\.c: cannot run the C compiler .*no-such-cc"):
        _native.load("_launchpath")
    monkeypatch.setenv("CC", "false")
    with pytest.raises(TritonhookError, match=r"_launchpath\.c: building it with false failed \(exit 1\)"):
        _native.load("_launchpath")
    assert not any(fresh_cache.iterdir())  # nothing half-built is left to load later
