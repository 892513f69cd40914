"""Start-up hook for processes run under `tritonhook run` / `tritonhook.enable()`.

Python imports `sitecustomize` at start-up; this directory is put first on PYTHONPATH so this file is found.
It arranges for capture to start as soon as the process imports Triton (processes that never import Triton pay
nothing), then runs the sitecustomize this one shadows, if any, so a user's own start-up hook still runs.
"""

import importlib
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _install_autoload():
    try:
        import tritonhook._autoload as autoload
    except ImportError:  # tritonhook run from a source tree that is not installed
        sys.path.append(os.path.dirname(os.path.dirname(_HERE)))
        import tritonhook._autoload as autoload
    autoload.install()


def _run_shadowed_sitecustomize():
    own = sys.modules.pop("sitecustomize", None)
    saved_path = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved_path
        if own is not None:
            sys.modules["sitecustomize"] = own


if os.environ.get("TRITONHOOK_ENABLE") == "1":
    _install_autoload()
_run_shadowed_sitecustomize()
