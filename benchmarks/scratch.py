"""A benchmark's scratch folder (stores, Triton caches, workers' files): made under the temporary directory and
removed when the process exits, so that repeated runs on the GPU machine do not fill its disk; and the environment
of a stage that runs with cold caches of its own there."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def scratch_dir(prefix: str) -> Path:
    """A new empty folder named `prefix`..., removed with everything in it at exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path


def cold_env(scratch: Path, name: str) -> dict:
    """This process's environment with Triton's and Inductor's caches in a new folder `name` of `scratch`: a stage
    that compiles and tunes from cold, as a first run does."""
    caches = scratch / name
    return dict(os.environ, TRITON_CACHE_DIR=str(caches / "triton"), TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
                PYTHONUNBUFFERED="1")
