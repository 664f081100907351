"""The controller's end-to-end tests once more, with the controller running the compiled engine: what
the images and every wheel built from a checkout ship (setup.py's build hook), where mypyc checks
declared types at run time and pure Python never does.

The module's ``kueue`` fixture stops the session's controller and starts one from a copy of the
package holding the compiled build (``pykueue.compiled``, cached by the sources), then the tests of
tests/e2e/test_controller.py and test_count_what_runs.py run against it unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from pykueue import compiled
from tests.e2e import test_controller, test_count_what_runs
from tests.e2e.conftest import REPO, Kueue

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def kueue(kueue: Kueue, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    """The session's cluster with a controller that runs the compiled engine."""
    build = compiled.cached_build(REPO)  # .ci/run's machine has the toolchain: a missing one fails here
    tree = compiled.copy_package(REPO, tmp_path_factory.mktemp("compiled-tree"), build)
    version = subprocess.run([sys.executable, "-m", "pykueue.cli", "--version"], cwd=tree, capture_output=True,
                             text=True, check=True).stdout
    assert "(compiled engine)" in version, version
    mine = Kueue(kueue.cluster, tmp_path_factory.mktemp("compiled-controller") / "controller.log", kueue.args, tree)
    kueue.stop()
    mine.start()
    try:
        yield mine
    finally:
        mine.stop()
        kueue.start()


for _module in (test_controller, test_count_what_runs):
    globals().update({name: test for name, test in vars(_module).items() if name.startswith("test_")})
