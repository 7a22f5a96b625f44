"""Copies the top-level data files (the compatibility matrix, the explain patterns) into the wheel.

The files live at the repository root so that they are easy to find and edit; an installed
envcheck reads them from inside the package.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_FILES = ("compat_matrix.yaml", "explain_patterns.yaml", "cuda_status.yaml")


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "envcheck"
        target.mkdir(parents=True, exist_ok=True)
        for name in DATA_FILES:
            source = root / name
            if source.exists():
                self.copy_file(str(source), str(target / name))


setup(cmdclass={"build_py": BuildPyWithData})
