"""tritonhook's C helpers (`_native`): built with the machine's real C compiler into the cache folder, loaded, and
refused clearly when the compiler is missing or fails."""
from __future__ import annotations

import pytest

from tritonhook import _native
from tritonhook.errors import TritonhookError


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONHOOK_CACHE", str(tmp_path / "native"))
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


def test_the_launch_path_passes_over_each_signature_its_own_count_when_signatures_alternate():
    """The C path remembers a kernel's last signature to skip building a key: launches that alternate between
    signatures (other grid, other scalar, an equal int that is another object) must each still count against
    their own signature, and a launch of a signature it does not know goes to the tracer."""
    module = _native.load("_launchpath")
    to_tracer = []

    class Kernel:
        hash = "k"

    seen = module.KernelSeen("spec")
    seen.arity, seen.key_function, seen.signatures = 2, (1,), {}
    small, large = module.SignatureSeen(), module.SignatureSeen()
    seen.signatures[((4, 1, 1), (4096,))] = small
    seen.signatures[((8, 1, 1), (2 ** 40,))] = large
    small.pass_next = large.pass_next = 1000
    wrapper = module.LaunchMetadata(lambda kernel, grid, stream, *args: "metadata",
                                    lambda kernel, known, grid, args: to_tracer.append((grid, args)),
                                    {"k": seen}, None)
    kernel = Kernel()
    for round_ in range(10):
        assert wrapper(kernel, (4, 1, 1), 0, "tensor", 4096) == "metadata"
        wrapper(kernel, (8, 1, 1), 0, "tensor", int("1" + "0" * 12) // 10 ** 12 * 2 ** 40)  # equal, not identical
        wrapper(kernel, (4, 1, 1), 0, "tensor", 4096)
    wrapper(kernel, (4, 1, 1), 0, "tensor", 4097)
    wrapper(kernel, (4, 1), 0, "tensor", 4096)
    assert (small.passed, small.pass_next, large.passed, large.pass_next) == (20, 980, 10, 990)
    assert to_tracer == [((4, 1, 1), ("tensor", 4097)), ((4, 1), ("tensor", 4096))]
