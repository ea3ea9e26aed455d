"""Where the files shipped beside the code are: gdb_scripts/ and templates/.

In the source tree they sit at the repository's top level, next to coreanalyze/; a wheel
carries them inside the package (coreanalyze/gdb_scripts, coreanalyze/templates: the
package-dir mapping in pyproject.toml). The code finds them here, either way.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent.parent  # the coreanalyze package


def shipped_dir(name: str) -> Path:
    """The directory `name` inside the installed package, else beside it in the source tree."""
    for candidate in (PACKAGE / name, PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"coreanalyze is installed without its {name}/ directory")


GDB_SCRIPTS = shipped_dir("gdb_scripts")
TEMPLATES = shipped_dir("templates")


def gdb_script_module(name: str) -> ModuleType:
    """A module or package of gdb_scripts/ imported into this process (one that needs no gdb: the
    walker). By path: in the source tree gdb_scripts/ is no package of coreanalyze's; a package's
    own modules are then found beside its __init__.py."""
    full_name = f"coreanalyze.gdb_scripts.{name}"
    module = sys.modules.get(full_name)
    if module is None:
        package = GDB_SCRIPTS / name
        if (package / "__init__.py").is_file():
            spec = importlib.util.spec_from_file_location(
                full_name, package / "__init__.py", submodule_search_locations=[str(package)]
            )
        else:
            spec = importlib.util.spec_from_file_location(full_name, GDB_SCRIPTS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full_name] = module
        spec.loader.exec_module(module)
    return module
