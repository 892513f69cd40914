"""A virtualenv per Triton release, made on first use under `config.upgrade.RELEASES_DIR` and reused after.

Each holds that release's Triton alone and reaches everything else (torch, the kernels' libraries) through a `.pth`
file that appends this environment's site-packages after its own, so its own Triton is the one imported: the
layout scripts/test-matrix.sh gives its release environments. A release is installed with this environment's pip
(`pip --python`), so the virtualenv needs no pip of its own. A virtualenv is made in a temporary folder and renamed
into place, so a process that finds `triton-X.Y.Z` finds it whole.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from .. import config
from ..errors import TritonhookError

_RELEASE = re.compile(r"\d+\.\d+\.\d+(?:[a-z]+\d*)?(?:\.post\d+)?")
_DIST_INFO = re.compile(r"triton-(.+)\.dist-info")


def releases_dir() -> Path:
    return Path(os.path.expanduser(config.upgrade.RELEASES_DIR.get()))


def release_python(version: str) -> Path:
    """The Python of the virtualenv holding Triton `version` (made and installed now when there is none)."""
    if not _RELEASE.fullmatch(version):
        raise TritonhookError(f"Triton {version!r}: give a release as X.Y.Z (e.g. 3.9.0)")
    venv = releases_dir() / f"triton-{version}"
    if installed_triton(venv) == version:
        return venv / "bin" / "python"
    if venv.is_symlink():
        raise TritonhookError(f"{venv}: links to a virtualenv without Triton {version} (it has "
                              f"{installed_triton(venv) or 'none'})")
    _make(venv, version)
    return venv / "bin" / "python"


def installed_triton(venv: Path) -> str | None:
    """The Triton version installed in `venv`'s own site-packages (not one it reaches through the .pth)."""
    for dist_info in venv.glob("lib/python*/site-packages/triton-*.dist-info"):
        if match := _DIST_INFO.fullmatch(dist_info.name):
            return match.group(1)
    return None


def _make(venv: Path, version: str) -> None:
    """Make the virtualenv of `version` at `venv`, saying so first on stderr: it takes minutes and about 1 GB
    (Triton's wheel unpacked), in a folder the user never named."""
    try:
        venv.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{venv.name}-", dir=venv.parent))
    except OSError as exc:
        why = "a file, not a folder" if isinstance(exc, FileExistsError) else exc.strerror or exc
        raise TritonhookError(f"{venv.parent}: cannot make Triton {version}'s virtualenv here ({why}; "
                              f"${config.upgrade.RELEASES_DIR.name} names this folder)") from None
    print(f"tritonhook: installing Triton {version} into a virtualenv of its own, {venv} (about 1 GB, once; "
          f"${config.upgrade.RELEASES_DIR.name} moves it)", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", "--without-pip", str(building)], check=True,
                       capture_output=True, text=True)
        python = building / "bin" / "python"
        _pip_install(python, version)  # before the .pth: pip must not see this environment's Triton as installed
        (_purelib(python) / "zz-tritonhook-shared.pth").write_text(
            f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
        _move_into_place(building, venv, version)
    except subprocess.CalledProcessError as exc:
        raise TritonhookError(f"{venv}: cannot make a virtualenv ({_last_line(exc.stderr)})") from None
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _move_into_place(building: Path, venv: Path, version: str) -> None:
    """Rename the finished virtualenv to `venv`, unless another process got there first with the same release."""
    if installed_triton(venv) == version:
        return  # another `upgrade` made it meanwhile: ours is removed, theirs may be in use
    if venv.exists():
        shutil.rmtree(venv)  # ours, without this release (an install that was interrupted)
    try:
        building.rename(venv)
    except OSError as exc:
        if installed_triton(venv) != version:
            raise TritonhookError(f"{venv}: cannot put the new virtualenv in place ({exc.strerror or exc})") from None


def _purelib(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout
    return Path(out.strip())


def _pip_install(python: Path, version: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--disable-pip-version-check", "--no-compile", "-q", f"triton=={version}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise TritonhookError(f"Triton {version}: pip cannot install it ({_last_line(done.stderr or done.stdout)})")
    if installed_triton(python.parent.parent) != version:
        raise TritonhookError(f"Triton {version}: pip finished but the virtualenv holds "
                              f"{installed_triton(python.parent.parent) or 'no Triton'}")


def _last_line(text: str) -> str:
    """pip's last error line (its last line when none says ERROR)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no message"])[-1]
