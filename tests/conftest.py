"""Results that several test modules read, each built once per test session: an upgrade, a bisect and a recording's
upgrade each rebuild kernels under other Triton releases (seconds to tens of seconds), and both the modules that
check the commands (tests/test_upgrade.py, test_bisect.py, test_upgrade_timing.py) and the report's
(tests/test_report_upgrade.py) read them. A module that adds results to one of these stores must not count on
being the only one that did.

The release virtualenvs are never downloaded here: scripts/test-matrix.sh points $TRITONHOOK_RELEASES_DIR at links
to its own; without them the fixtures that need them skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from release_subjects import BISECT_COMPILES, BISECT_SUBJECTS, UPGRADE_COMPILES, UPGRADE_SUBJECTS, capture_subjects

UPGRADE_TARGET = "3.9.0"


def _release_python(release: str) -> Path | None:
    from tritonhook.upgrade.releases import installed_triton, releases_dir

    folder = releases_dir() / f"triton-{release}"
    return folder / "bin" / "python" if installed_triton(folder) == release else None


@pytest.fixture(scope="session")
def release_39() -> Path:
    """The Triton 3.9.0 virtualenv `upgrade` would use, where one exists already (never installed here)."""
    from tritonhook.upgrade.releases import releases_dir

    if _release_python(UPGRADE_TARGET) is None:
        pytest.skip(f"no Triton {UPGRADE_TARGET} virtualenv under {releases_dir()} ($TRITONHOOK_RELEASES_DIR; "
                    f"scripts/test-matrix.sh links its own there)")
    return releases_dir() / f"triton-{UPGRADE_TARGET}"


@pytest.fixture(scope="session")
def upgrade_subjects(tmp_path_factory):
    """tests/release_subjects.py's upgrade subjects captured for sm_90 under the running Triton, from a module file
    deleted afterwards (a rebuild has the capture alone)."""
    import tritonhook
    from tritonhook import _triton

    if _triton.parse_version(_triton.triton_version()) >= (3, 9):
        pytest.skip("the subjects are captured under a release that has tl.advance (Triton 3.9 removed it)")
    folder = tmp_path_factory.mktemp("upgrade")
    return tritonhook.Store(capture_subjects(folder, "upgrade_subjects", UPGRADE_SUBJECTS, UPGRADE_COMPILES,
                                             keep=False))


@pytest.fixture(scope="session")
def upgraded(upgrade_subjects, release_39):
    """`upgrade` of the upgrade subjects to Triton 3.9.0: the scale kernel's four cells, and the tl.advance kernel
    3.9 refuses (a row with its compile error)."""
    from tritonhook.upgrade import upgrade

    return upgrade(upgrade_subjects, to=UPGRADE_TARGET)


@pytest.fixture(scope="session")
def releases() -> dict[str, Path]:
    """Each supported release's Python, where its virtualenv exists already (never installed here)."""
    from tritonhook import config
    from tritonhook.upgrade.releases import releases_dir

    found = {release: _release_python(release) for release in config.SUPPORTED_RELEASES}
    missing = [release for release, python in found.items() if python is None]
    if missing:
        pytest.skip(f"no Triton {', '.join(missing)} virtualenv under {releases_dir()} ($TRITONHOOK_RELEASES_DIR; "
                    f"scripts/test-matrix.sh links its own there)")
    return found


@pytest.fixture(scope="session")
def bisect_subjects(tmp_path_factory):
    """tests/release_subjects.py's bisect subjects compiled under capture from a module file (kept: test_bisect's
    direct compiles read it too): (store, module file)."""
    import tritonhook
    from tritonhook import _triton, config

    first = config.SUPPORTED_RELEASES[0]
    if _triton.triton_version() != first:
        pytest.skip(f"the known answers are for kernels captured under the oldest supported release, {first} "
                    f"(this is Triton {_triton.triton_version()})")
    folder = tmp_path_factory.mktemp("bisect")
    store = capture_subjects(folder, "bisect_subjects", BISECT_SUBJECTS, BISECT_COMPILES, keep=True)
    return tritonhook.Store(store), folder / "bisect_subjects.py"


@pytest.fixture(scope="session")
def bisected(bisect_subjects, releases):
    """`bisect` of every bisect subject from the oldest supported release to the newest."""
    from tritonhook import config
    from tritonhook.upgrade.bisect import bisect

    return bisect(bisect_subjects[0], kernel="_kernel$", from_release=config.SUPPORTED_RELEASES[0],
                  to_release=config.SUPPORTED_RELEASES[-1])


@pytest.fixture(scope="session")
def recording_upgraded(tmp_path_factory, release_39):
    """A recording made without a GPU (tests/sample_recording.py: two signatures) and the upgrade of its kernels to
    Triton 3.9.0: (store, recording, upgrade result)."""
    pytest.importorskip("torch")
    from sample_recording import sample_recording
    from tritonhook.upgrade import upgrade

    store, recording = sample_recording(tmp_path_factory.mktemp("store"), signatures=2)
    return store, recording, upgrade(store, to=UPGRADE_TARGET, recording=str(recording.id))
