"""Everything is in pyproject.toml but one file: the process-startup hook of the crash guard,
`coreanalyze-guard.pth`, which must sit in site-packages itself (not inside the package) for the
interpreter to run it at startup (docs/capture.md). Wheels carry it; an editable install does not
(setuptools leaves such files out): `coreanalyze guard --install` puts it there."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HOOK = "coreanalyze-guard.pth"
HOOK_SOURCE = os.path.join("coreanalyze", "capture", HOOK)


class BuildWithStartupHook(build_py):
    def run(self):
        super().run()
        self.copy_file(HOOK_SOURCE, os.path.join(self.build_lib, HOOK))

    def get_outputs(self, include_bytecode=1):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, HOOK)]


setup(cmdclass={"build_py": BuildWithStartupHook})
