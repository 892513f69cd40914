"""scripts/triton_key_memo.py, the suites' shared `triton_key()`: a process reading the memo gets the key Triton
computes itself, and the memo's fingerprint changes with any file Triton's key reads."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.every_release  # reaches what differs between Triton releases (scripts/test-matrix.sh)

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "triton_key_memo.py"
spec = importlib.util.spec_from_file_location("triton_key_memo_under_test", SCRIPT)
memo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memo)  # no variable set here, so it installs nothing

KEY_OF_A_FRESH_PROCESS = """
import sys
sys.path.insert(0, sys.argv[1])
import triton_key_memo  # installs the wait for triton.runtime.cache when the variable is set
from triton.runtime import autotuner, cache
assert autotuner.triton_key is cache.triton_key  # imported by name after the wrapping
print(cache.triton_key.__qualname__, cache.triton_key())
"""


def key_of_a_fresh_process(memo_folder: Path | None) -> tuple[str, str]:
    env = {name: value for name, value in os.environ.items() if name != memo.MEMO_VARIABLE}
    if memo_folder is not None:
        env[memo.MEMO_VARIABLE] = str(memo_folder)
    done = subprocess.run([sys.executable, "-c", KEY_OF_A_FRESH_PROCESS, str(SCRIPT.parent)], env=env,
                          capture_output=True, text=True, check=True)
    qualname, key = done.stdout.rstrip("\n").split(" ", 1)
    return qualname, key


def test_the_memo_holds_the_key_triton_computes_and_the_next_process_reads_it(tmp_path):
    folder = tmp_path / "memo"
    own_qualname, own = key_of_a_fresh_process(None)
    first_qualname, first = key_of_a_fresh_process(folder)
    [kept] = folder.iterdir()
    kept.write_text(kept.read_text() + "-read from the memo")  # the next process's key can only come from here
    _, second = key_of_a_fresh_process(folder)
    assert own_qualname == "triton_key" and first_qualname == "_memoized.<locals>.triton_key"
    assert first == own and second == own + "-read from the memo"


@pytest.mark.release_independent  # the fingerprint of a folder made here
def test_the_fingerprint_changes_with_any_file_tritons_key_reads(tmp_path):
    root = tmp_path / "triton"
    files = [root / "compiler" / "compiler.py", root / "backends" / "nvidia" / "compiler.py",
             root / "language" / "core.py", root / "_C" / "libtriton.so", root / "runtime" / "cache.py"]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("one")
    cache_module = str(root / "runtime" / "cache.py")
    seen = {memo._fingerprint(str(root), cache_module)}
    for file in files:
        file.write_text("other")  # another size
        seen.add(memo._fingerprint(str(root), cache_module))
        os.utime(file, ns=(1, 1))  # another modification time
        seen.add(memo._fingerprint(str(root), cache_module))
    assert len(seen) == 1 + 2 * len(files)
