"""Builds the sandbox's launcher (tools/sandbox/launcher.c) into an executable beside it.

Everything else is in pyproject.toml. The launcher is declared as an optional extension
so that setuptools finds the platform's C compiler and builds it with every install
(in place for an editable one), but links it as a program, not a module. Without a
compiler the install still succeeds: the sandbox then starts commands through
launcher.py and says so (tools/sandbox/probe.py).
"""

from __future__ import annotations

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

LAUNCHER = "tools.sandbox.sandbox-launcher"
_PROGRAM = LAUNCHER.rsplit(".", 1)[1]


class BuildLauncher(build_ext):
    """build_ext that links the launcher as an executable named after its extension."""

    def get_ext_filename(self, fullname: str) -> str:
        # Asked with the full dotted name or with its last part only: no module suffix.
        if fullname.rsplit(".", 1)[-1] == _PROGRAM:
            return os.path.join(*fullname.split("."))
        return super().get_ext_filename(fullname)

    def build_extension(self, ext: Extension) -> None:
        if ext.name.rsplit(".", 1)[-1] != _PROGRAM:
            super().build_extension(ext)
            return
        objects = self.compiler.compile(
            ext.sources,
            output_dir=self.build_temp,
            extra_postargs=["-O2", "-Wall"],
            debug=self.debug,
        )
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self.compiler.link_executable(objects, os.path.basename(target), output_dir=os.path.dirname(target))
        os.chmod(target, 0o755)


setup(
    ext_modules=[Extension(LAUNCHER, sources=["tools/sandbox/launcher.c"], optional=True)],
    cmdclass={"build_ext": BuildLauncher},
)
