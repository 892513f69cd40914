"""A benchmark's scratch folder (stores, Triton caches, workers' files): made under the temporary directory and
removed when the process exits, so that repeated runs on the GPU machine do not fill its disk."""

import atexit
import shutil
import tempfile
from pathlib import Path


def scratch_dir(prefix: str) -> Path:
    """A new empty folder named `prefix`..., removed with everything in it at exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path
