"""The build hook that puts the compiled engine in every wheel (``pip install .``, ``pip wheel .``).

The engine and the simulate path are compiled with mypyc (``pykueue.compiled.COMPILED``) when mypyc, a
C compiler and Python's headers are present, as black and mypy ship theirs; otherwise the wheel is pure
Python and one line says why. An editable install stays pure: its sources are the working tree, which
``python -m pykueue.compiled build`` compiles on request. ``PYKUEUE_PURE=1`` skips the compilation.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # pykueue.compiled from this tree (stdlib imports only)

from pykueue import compiled  # noqa: E402


def _toolchain() -> str | None:
    """Why no compiled build can be made here, or None when one can."""
    if os.environ.get("PYKUEUE_PURE"):
        return "PYKUEUE_PURE is set"
    try:
        compiled.check_toolchain()
    except compiled.ToolchainMissing as e:
        return str(e)
    return None


class BuildPy(build_py):
    """Copies the sources, then compiles them into the build directory beside them."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs the working tree: pure unless built on request
        missing = _toolchain()
        if missing is not None:
            print(f"pykueue: building pure Python (the compiled engine needs mypyc, a C compiler and "
                  f"Python's headers: {missing})", file=sys.stderr)
            return
        try:
            # the build cache the tests and `python -m pykueue.compiled build` share: the same sources
            # are compiled once per machine
            build = compiled.cached_build(HERE)
        except compiled.BuildError as e:
            print(f"pykueue: building pure Python (mypyc failed: {str(e).splitlines()[0]})", file=sys.stderr)
            return
        shutil.copytree(build / "pykueue", Path(self.build_lib) / "pykueue", dirs_exist_ok=True)
        count = len(compiled.installed(build))
        print(f"pykueue: compiled engine built ({count} extension modules, from {build})", file=sys.stderr)


class PlatformDistribution(Distribution):
    """A wheel holding extension modules is tagged for this interpreter and platform."""

    def has_ext_modules(self) -> bool:
        return _toolchain() is None


setup(cmdclass={"build_py": BuildPy}, distclass=PlatformDistribution)
