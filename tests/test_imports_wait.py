"""`_imports.after_import`: several waits on one module each run once it is imported, in the order asked, and a
removed wait does not (tritonhook's autotune tracer and pinner both wait for Inductor's runtime autotuner)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tritonhook

pytestmark = pytest.mark.release_independent  # an import of the standard library's fractions


def test_every_wait_on_a_module_runs_in_order_and_a_removed_one_does_not():
    program = """
import sys
from tritonhook._imports import after_import, waiting_for
assert "fractions" not in sys.modules
ran = []
first = after_import("fractions", lambda module: ran.append(("first", module.__name__)))
removed = after_import("fractions", lambda module: ran.append(("removed", module.__name__)))
after_import("fractions", lambda module: ran.append(("last", module.__name__)))
removed.remove()
assert waiting_for("fractions") and len([f for f in sys.meta_path if getattr(f, "name", None) == "fractions"]) == 1
import fractions
assert not waiting_for("fractions")
after_import("fractions", lambda module: ran.append(("imported already", module.__name__)))
gone = after_import("colorsys", lambda module: ran.append(("never", module.__name__)))
gone.remove()
assert not waiting_for("colorsys")
import colorsys
print(ran)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(tritonhook.__file__).parent.parent)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ("[('first', 'fractions'), ('last', 'fractions'), "
                                   "('imported already', 'fractions')]")
