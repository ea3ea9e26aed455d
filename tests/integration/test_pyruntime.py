"""Python frames of a core whose interpreter is gone: _PyRuntime located in the core alone.

Each core is dumped by a copy of a real interpreter (its executable, and its libpython when it
has one) run from a temporary directory; the copy is deleted before the analysis, so neither
gdb nor the in-process reader has the interpreter's symbols. The frames must still be the
script's lines, and the same as those of the analysis that has the interpreter (a sysroot
holding the deleted copy's files at their old paths).

3.11 is Debian's /usr/bin/python3.11 (static interpreter, always installed); 3.12 and 3.13 are
pyenv's builds (shared libpython), like the rest of the interpreter tests.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from support.clirun import analyze_json, crashed_thread
from support.coregen import compile_c, run_to_core
from support.paths import PYCRASHERS
from support.pycrash import interpreter, marker_line
from support.sysroots import link_os_directories, under_os_directory

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.process.process import Process
from coreanalyze.python.coretarget import walk_core
from coreanalyze.python.pyruntime import locate_runtime

VERSIONS = {"3.11": "system", "3.12": "3.12", "3.13": "3.13"}
FOUND_BY = {"3.11": "cross-pointers", "3.12": "cross-pointers", "3.13": "debug-offsets"}
SCRIPT = PYCRASHERS / "three_deep.py"


def needed(path: Path) -> list[str]:
    with open(path, "rb") as f:
        dynamic = ELFFile(f).get_section_by_name(".dynamic")
        return [t.needed for t in dynamic.iter_tags("DT_NEEDED")] if isinstance(dynamic, DynamicSection) else []


class GoneCore:
    """A core of three_deep.py whose interpreter copy was deleted; the originals of the copy."""

    def __init__(self, root: Path, version: str, script: Path = SCRIPT, env: dict | None = None) -> None:
        exe = interpreter(VERSIONS[version])
        prefix = exe.parent.parent
        copy = root / "interpreter"
        (copy / "bin").mkdir(parents=True)
        (copy / "lib").mkdir()
        self.originals = {copy / "bin" / exe.name: exe}
        for name in needed(exe):
            if name.startswith("libpython"):
                self.originals[copy / "lib" / name] = prefix / "lib" / name
        for dest, source in self.originals.items():
            shutil.copy2(source, dest)
        env = {"PYTHONHOME": str(prefix), "LD_LIBRARY_PATH": str(copy / "lib"), **(env or {})}
        self.case = run_to_core(f"gone-{version}", [str(copy / "bin" / exe.name), str(script)], root / "run", env=env)
        shutil.rmtree(copy)

    def sysroot_with_interpreter(self, root: Path) -> Path:
        """The OS files where they are, and the deleted copy's files at their old paths."""
        sysroot = root / "with-interpreter"
        link_os_directories(sysroot)
        with read_core(self.case.core) as notes:
            paths = {m.path for m in notes.mappings if not under_os_directory(m.path)}
        for path in paths:
            source = self.originals.get(Path(path), Path(path))
            if source.is_file():
                link = sysroot / path.lstrip("/")
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(source)
        return sysroot


@pytest.fixture(scope="module", params=sorted(VERSIONS))
def gone(request, tmp_path_factory):
    version = request.param
    return version, GoneCore(tmp_path_factory.mktemp(f"gone-{version}"), version)


def python_frames(report: dict) -> list[tuple[str, str | None, int | None]]:
    return [(f["function"], f["file"], f["line"]) for f in crashed_thread(report)["frames"] if f["kind"] == "python"]


def test_frames_with_the_interpreter_gone(gone, tmp_path):
    version, core = gone
    interpreter_files = [str(p) for p in core.originals]
    assert not any(os.path.exists(p) for p in interpreter_files)

    report = analyze_json(core.case.core)
    frames = python_frames(report)
    assert [f[0].rsplit(".", 1)[-1] for f in frames] == ["string_at", "load_weights", "build_model", "train", "<module>"]
    assert [(f[1], f[2]) for f in frames[1:]] == [
        (str(SCRIPT), marker_line(SCRIPT, marker)) for marker in ("CRASH-LINE", "CALL-LOAD", "CALL-BUILD", "CALL-TRAIN")
    ]
    assert frames[0][1].endswith("/ctypes/__init__.py")
    assert report["environment"]["python_version"].startswith(version)
    assert report["environment"]["python_runtime"] == f"located by scanning the core ({FOUND_BY[version]})"
    assert any(w.startswith("Python runtime located by scanning the core") for w in report["warnings"])
    assert not any("no _PyRuntime symbol" in w for w in report["warnings"])

    # The analysis that has the interpreter gives the same frames, from its symbols.
    local = analyze_json(core.case.core, "--sysroot", str(core.sysroot_with_interpreter(tmp_path)))
    assert "python_runtime" not in local["environment"]
    assert python_frames(local) == frames


def test_located_runtime_is_the_symbol(gone):
    """The address found by scanning is where the interpreter's own symbol puts _PyRuntime."""
    version, core = gone
    with read_core(core.case.core) as notes:
        found = locate_runtime(Process(notes))
        assert found is not None and found.how == FOUND_BY[version]
        interpreter_file = next(p for p in core.originals if p.name.startswith(("libpython", "python")) and str(p) == found.file)
        mapping = min((m for m in notes.mappings if m.path == found.file), key=lambda m: m.start)
    with open(core.originals[interpreter_file], "rb") as f:
        elf = ELFFile(f)
        symbol = elf.get_section_by_name(".dynsym").get_symbol_by_name("_PyRuntime")[0]
        first_load = min(s["p_vaddr"] for s in elf.iter_segments() if s["p_type"] == "PT_LOAD")
        pie = elf.header["e_type"] == "ET_DYN"
    bias = mapping.start - first_load if pie else 0
    assert found.address == bias + symbol["st_value"]


def test_imports_read_without_type_names(gone):
    """sys.modules of the dead process, read with the type names gone with the interpreter."""
    _, core = gone
    with read_core(core.case.core) as notes:
        found = locate_runtime(Process(notes))
        doc = walk_core(Process(notes), module_table(notes), {"imports": True, **found.walker_options()})
    imports = {i["name"]: i for i in doc["imports"]}
    assert {"sys", "builtins", "ctypes", "_ctypes"} <= set(imports)
    assert imports["ctypes"]["file"].endswith("/ctypes/__init__.py")
    assert imports["ctypes"]["version"]  # ctypes.__version__


def test_launched_from_with_the_interpreter_gone(gone, tmp_path):
    """A native worker thread faults while its Python caller waits: the call site is named from
    the core alone, as with the interpreter."""
    version, _ = gone
    lib = tmp_path / "libnative_worker.so"
    compile_c(PYCRASHERS / "native_worker.c", lib, ("-shared", "-fPIC"))
    script = PYCRASHERS / "native_worker.py"
    core = GoneCore(tmp_path / "core", version, script, env={"NATIVE_WORKER_LIB": str(lib)})

    report = analyze_json(core.case.core)
    assert report["environment"]["python_runtime"].startswith("located by scanning the core")
    assert not python_frames(report)  # the crashed thread is the native worker
    assert report["launched_from"]["file"] == str(script)
    assert (report["launched_from"]["function"], report["launched_from"]["line"]) == (
        "run_step",
        marker_line(script, "WAIT-LINE"),
    )
    local = analyze_json(core.case.core, "--sysroot", str(core.sysroot_with_interpreter(tmp_path)))
    assert local["launched_from"] == report["launched_from"]
