"""Debug files, the symbolizer and its cache, frame improvement — on real cores of a program
that faults inside a shared library compiled here, then stripped, split, rebuilt or moved."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.clirun import crashed_thread, run_cli
from support.coregen import compile_c, run_to_core
from support.paths import CRASHERS
from support.require import missing, require

from coreanalyze.base import model
from coreanalyze.corefile import read_core, threads_from_notes
from coreanalyze.corefile.modules import elf_build_id, module_table
from coreanalyze.gdb.collect import collect
from coreanalyze.gdb.session import GdbSession
from coreanalyze.symbols import Symbolizer, debug_dirs_for_gdb, find_debug_file, improve_frames
from coreanalyze.symbols.locate import read_debuglink

LIB_SOURCE = CRASHERS / "symlib_lib.c"
MAIN_SOURCE = CRASHERS / "symlib_main.c"
LIB_NAME = "libsymlib_x.so"


def marker_line(marker: str) -> int:
    for number, text in enumerate(LIB_SOURCE.read_text().splitlines(), start=1):
        if marker in text:
            return number
    raise AssertionError(f"{marker} is not in {LIB_SOURCE}")


FAULT_LINE = marker_line("SYMLIB_FAULT_LINE")
CALL_LINE = marker_line("SYMLIB_CALL_LINE")


@dataclass
class SymlibCase:
    core: Path
    exe: Path
    lib: Path
    workdir: Path
    build_id: str


def build_symlib(directory: Path, variant: int = 1, lib_flags: tuple[str, ...] = ()) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    lib = compile_c(LIB_SOURCE, directory / LIB_NAME, ("-shared", "-fPIC", f"-DSYMLIB_VARIANT={variant}", *lib_flags))
    exe = compile_c(MAIN_SOURCE, directory / "symlib_main", ("-L", str(directory), "-lsymlib_x", f"-Wl,-rpath,{directory}"))
    return exe, lib


def crash(root: Path, name: str) -> SymlibCase:
    require("gcc")
    require("gdb")
    workdir = root / name
    exe, lib = build_symlib(workdir)
    case = run_to_core(name, [str(exe)], workdir)
    build_id = elf_build_id(lib)
    assert build_id
    return SymlibCase(case.core, exe, lib, workdir, build_id)


def split_debug(lib: Path, debug_file: Path, strip_flag: str) -> None:
    """The usual packaging: debug info to a file of its own, the library stripped and linked to it."""
    objcopy, strip = require("objcopy"), require("strip")
    debug_file.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([objcopy, "--only-keep-debug", str(lib), str(debug_file)], check=True, capture_output=True)
    subprocess.run([strip, strip_flag, str(lib)], check=True, capture_output=True)
    subprocess.run([objcopy, f"--add-gnu-debuglink={debug_file}", str(lib)], check=True, capture_output=True)


def build_id_path(root: Path, build_id: str) -> Path:
    return root / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"


def notes_report(notes, **table_options) -> model.Report:
    """What is known without gdb: frame 0 of each thread and the module table."""
    return model.Report(
        crashing_thread=notes.crashing_tid,
        threads=threads_from_notes(notes),
        modules=module_table(notes, **table_options),
    )


def gdb_report(notes, case: SymlibCase, executable: Path | None = None, **table_and_gdb) -> model.Report:
    """Threads as gdb unwinds them (gdb is not given any debug directory unless asked)."""
    sysroot = table_and_gdb.get("sysroot")
    debug_dirs = table_and_gdb.pop("debug_dirs", ())
    report = model.Report(crashing_thread=notes.crashing_tid, modules=module_table(notes, **table_and_gdb))
    with GdbSession() as session:
        session.load(case.core, executable=executable or case.exe, sysroot=sysroot, debug_dirs=debug_dirs)
        analysis = collect(session)
    report.threads = analysis.threads
    return report


def lib_frames(report: model.Report, lib_path: str) -> list[model.Frame]:
    thread = report.crashed_thread
    assert thread is not None
    return [f for f in thread.frames if f.module == lib_path]


def module_of(report: model.Report, path: str) -> model.Module:
    return next(m for m in report.modules if m.path == path)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("symlib")


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


# ------------------------------------------------------------------------- debug files


@pytest.fixture(scope="module")
def by_build_id(root):
    """Crashed, then stripped of everything; its debug file only in a --debug-dir's .build-id tree."""
    case = crash(root, "by_build_id")
    debug_dir = root / "by_build_id_debug"
    staged = root / "by_build_id_staging" / f"{LIB_NAME}.debug"
    split_debug(case.lib, staged, "--strip-all")
    target = build_id_path(debug_dir, case.build_id)
    target.parent.mkdir(parents=True)
    shutil.move(staged, target)
    assert elf_build_id(case.lib) == case.build_id  # stripping keeps the build-id note
    return case, debug_dir, target


def test_debug_file_found_in_a_build_id_tree(by_build_id):
    case, debug_dir, target = by_build_id
    with read_core(case.core) as notes:
        module = module_of(notes_report(notes), str(case.lib))
    assert module.status == "ok"
    assert find_debug_file(module, [str(debug_dir)], None) == str(target)
    assert find_debug_file(module, [], None) is None


def test_build_id_debug_file_gives_the_faulting_line(by_build_id, cache):
    case, debug_dir, _ = by_build_id
    with read_core(case.core) as notes:
        # Without gdb: only frame 0, from the core's registers.
        report = notes_report(notes)
        with Symbolizer([str(debug_dir)], cache=cache) as symbolizer:
            improve_frames(report, symbolizer=symbolizer, notes=notes)
        top = report.crashed_thread.frames[0]
        assert (top.function, top.raw_function) == ("symlib_store", "symlib_store")
        assert (Path(top.file).name, top.line) == ("symlib_lib.c", FAULT_LINE)
        assert top.offset is not None and top.offset > 0
        assert top.reliable

        # With gdb, which has neither the debug file nor .symtab: the static function is nameless.
        report = gdb_report(notes, case)
        frames = lib_frames(report, str(case.lib))
        assert frames[0].function is None
        warnings = improve_frames(report, debug_dirs=[str(debug_dir)], notes=notes, symbolizer=Symbolizer([str(debug_dir)], cache=cache))
        assert warnings == []
        assert [(f.function, f.line) for f in frames] == [("symlib_store", FAULT_LINE), ("symlib_entry", CALL_LINE)]
        assert report.crashed_thread.frames[2].function == "main"


def test_build_id_debug_file_through_the_cli(by_build_id, tmp_path):
    case, debug_dir, _ = by_build_id
    run = run_cli(
        str(case.core), "--python", str(case.exe), "--debug-dir", str(debug_dir), "--format", "json", "-o", "-",
        env={"COREANALYZE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert run.code == 0, run.stderr
    frames = [f for f in crashed_thread(run.json)["frames"] if f["module"] == str(case.lib)]
    assert [(f["function"], Path(f["file"]).name, f["line"]) for f in frames] == [
        ("symlib_store", "symlib_lib.c", FAULT_LINE),
        ("symlib_entry", "symlib_lib.c", CALL_LINE),
    ]
    lib = next(m for m in run.json["modules"] if m["path"] == str(case.lib))
    assert lib["status"] == "ok"


@pytest.fixture(scope="module")
def by_debuglink(root):
    """Crashed, then stripped of its DWARF (names kept); the debug file in the library's .debug/."""
    case = crash(root, "by_debuglink")
    target = case.lib.parent / ".debug" / f"{LIB_NAME}.debug"
    split_debug(case.lib, target, "--strip-debug")
    assert read_debuglink(str(case.lib)).name == f"{LIB_NAME}.debug"
    return case, target


def test_debuglink_finds_the_debug_file(by_debuglink, cache):
    case, target = by_debuglink
    with read_core(case.core) as notes:
        report = notes_report(notes)
        assert find_debug_file(module_of(report, str(case.lib)), [], None) == str(target)
        with Symbolizer(cache=cache) as symbolizer:
            improve_frames(report, symbolizer=symbolizer, notes=notes)
            assert any(p == str(target) for p in symbolizer.indexed)
        top = report.crashed_thread.frames[0]
        assert (top.function, Path(top.file).name, top.line) == ("symlib_store", "symlib_lib.c", FAULT_LINE)

        # Without the core's notes the load address comes from the module table and the file.
        report = notes_report(notes)
        improve_frames(report, symbolizer=Symbolizer(cache=cache))
        assert (report.crashed_thread.frames[0].function, report.crashed_thread.frames[0].line) == ("symlib_store", FAULT_LINE)


def test_debuglink_through_the_cli(by_debuglink, tmp_path):
    case, _ = by_debuglink
    run = run_cli(
        str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-",
        env={"COREANALYZE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert run.code == 0, run.stderr
    frames = [f for f in crashed_thread(run.json)["frames"] if f["module"] == str(case.lib)]
    assert [(f["function"], f["line"]) for f in frames] == [("symlib_store", FAULT_LINE), ("symlib_entry", CALL_LINE)]


def test_debuginfod_cache_and_gdb_debug_dirs(root, cache, monkeypatch):
    """A debug file only in the debuginfod client's cache: found there, and handed to gdb."""
    case = crash(root, "debuginfod")
    staged = root / "debuginfod_staging" / f"{LIB_NAME}.debug"
    split_debug(case.lib, staged, "--strip-all")
    debuginfod = root / "debuginfod_client"
    target = debuginfod / case.build_id / "debuginfo"
    target.parent.mkdir(parents=True)
    shutil.move(staged, target)
    monkeypatch.setenv("DEBUGINFOD_CACHE_PATH", str(debuginfod))
    with read_core(case.core) as notes:
        report = notes_report(notes)
        assert find_debug_file(module_of(report, str(case.lib)), [], None) == str(target)
        with Symbolizer(cache=cache) as symbolizer:
            dirs = debug_dirs_for_gdb(report, [], symbolizer=symbolizer)
        links = cache / "debug-links"
        assert str(links) in dirs
        assert os.path.realpath(build_id_path(links, case.build_id)) == str(target)
        # gdb reads the debug file through the link by itself: names and lines from gdb.
        report = gdb_report(notes, case, debug_dirs=dirs)
        frames = lib_frames(report, str(case.lib))
        assert [(f.function, f.line) for f in frames] == [("symlib_store", FAULT_LINE), ("symlib_entry", CALL_LINE)]


def test_debug_file_places_in_order_and_other_builds_rejected(by_build_id, rebuilt, tmp_path):
    case, _, good = by_build_id
    _, _, other_build_debug = rebuilt
    module = model.Module(path=str(case.lib), build_id=case.build_id, local_path=str(case.lib),
                          local_build_id=case.build_id, status="ok")
    sysroot, first, second = tmp_path / "sysroot", tmp_path / "first", tmp_path / "second"
    in_sysroot = build_id_path(sysroot / "usr/lib/debug", case.build_id)
    for place, source in ((in_sysroot, other_build_debug), (build_id_path(first, case.build_id), good),
                          (build_id_path(second, case.build_id), good)):
        place.parent.mkdir(parents=True)
        shutil.copyfile(source, place)
    warnings: list[str] = []
    found = find_debug_file(module, [str(first), str(second)], str(sysroot), warnings=warnings)
    # The sysroot is asked first, but its file is of another build: refused, with a warning.
    assert found == str(build_id_path(first, case.build_id))
    assert len(warnings) == 1 and str(in_sysroot) in warnings[0] and "ignored" in warnings[0]
    shutil.copyfile(good, in_sysroot)
    assert find_debug_file(module, [str(first)], str(sysroot)) == str(in_sysroot)
    # A build-id from a core must not lead outside the directories searched.
    hostile = model.Module(path="/../../etc/passwd", build_id="../../../../etc", status="missing")
    assert find_debug_file(hostile, [str(first)], str(sysroot)) is None


@pytest.fixture(scope="module")
def without_build_id(root):
    """A library linked without a build-id, shipped stripped with a debuglink (CRC32 only)."""
    require("gdb")
    workdir = root / "without_build_id"
    exe, lib = build_symlib(workdir, lib_flags=("-Wl,--build-id=none",))
    target = workdir / ".debug" / f"{LIB_NAME}.debug"
    split_debug(lib, target, "--strip-all")
    assert elf_build_id(lib) is None
    case = run_to_core("without_build_id", [str(exe)], workdir)
    return SymlibCase(case.core, exe, lib, workdir, ""), target


def test_without_build_id_the_debuglink_crc_decides(without_build_id, cache, tmp_path):
    case, target = without_build_id
    with read_core(case.core) as notes:
        report = notes_report(notes)
        module = module_of(report, str(case.lib))
        assert module.status == "no-build-id"
        assert find_debug_file(module, [], None) == str(target)
        first = Symbolizer(cache=cache)
        improve_frames(report, symbolizer=first, notes=notes)
        top = report.crashed_thread.frames[0]
        assert (top.function, top.line) == ("symlib_store", FAULT_LINE)
        assert set(first.indexed) == {str(case.lib), str(target)}
        first.close()
        # Cached under the file's identity: the next run does not parse either file.
        report = notes_report(notes)
        second = Symbolizer(cache=cache)
        improve_frames(report, symbolizer=second, notes=notes)
        assert (report.crashed_thread.frames[0].function, report.crashed_thread.frames[0].line) == ("symlib_store", FAULT_LINE)
        assert second.indexed == []
        second.close()
        # A debug file that fails the CRC check is refused.
        other = tmp_path / "other.debug"
        shutil.copyfile(target, other)
        with open(other, "ab") as f:
            f.write(b"changed")
        bad = tmp_path / "dbg" / str(case.lib.parent).lstrip("/") / f"{LIB_NAME}.debug"
        bad.parent.mkdir(parents=True)
        shutil.move(other, bad)
        shutil.move(target, tmp_path / "kept.debug")
        try:
            warnings: list[str] = []
            assert find_debug_file(module, [str(tmp_path / "dbg")], None, warnings=warnings) is None
            assert any("CRC32" in w for w in warnings), warnings
        finally:
            shutil.move(tmp_path / "kept.debug", target)


# ------------------------------------------------------------------------- another build


@pytest.fixture(scope="module")
def rebuilt(root):
    """Crashed; afterwards the library was rebuilt from changed source (a new build-id), and
    the new build's debug file sits where its debuglink points. The crashed build's debug file
    is kept apart, in a .build-id tree."""
    case = crash(root, "rebuilt")
    old_debug_dir = root / "rebuilt_original_debug"
    old_debug = build_id_path(old_debug_dir, case.build_id)
    old_debug.parent.mkdir(parents=True)
    subprocess.run([require("objcopy"), "--only-keep-debug", str(case.lib), str(old_debug)], check=True)
    build_symlib(case.workdir, variant=2)
    new_debug = case.lib.parent / ".debug" / f"{LIB_NAME}.debug"
    split_debug(case.lib, new_debug, "--strip-debug")
    assert elf_build_id(case.lib) != case.build_id
    return case, old_debug_dir, new_debug


def test_rebuilt_library_frames_are_not_named_from_the_new_build(rebuilt, cache):
    case, _, new_debug = rebuilt
    with read_core(case.core) as notes:
        report = gdb_report(notes, case)
        lib = module_of(report, str(case.lib))
        assert lib.status == "mismatch"
        assert lib.build_id == case.build_id != lib.local_build_id
        frames = lib_frames(report, str(case.lib))
        assert frames  # gdb used the new file: whatever it called these frames is about other code
        gdb_names = [f.function for f in frames]
        warnings = improve_frames(report, symbolizer=Symbolizer(cache=cache), notes=notes)
        assert all(not f.reliable for f in frames)
        assert [f.function for f in frames] == [None] * len(frames), gdb_names
        assert all(f.line is None and f.file is None for f in frames)
        assert any("not the build that crashed" in w and "left unnamed" in w for w in warnings), warnings
        # The new build's debug file, found through the new file's debuglink, is refused.
        assert any(str(new_debug) in w and "ignored" in w for w in warnings), warnings


def test_rebuilt_library_named_from_the_crashed_builds_debug_file(rebuilt, cache):
    case, old_debug_dir, _ = rebuilt
    with read_core(case.core) as notes:
        report = gdb_report(notes, case)
        frames = lib_frames(report, str(case.lib))
        warnings = improve_frames(report, debug_dirs=[str(old_debug_dir)], notes=notes, symbolizer=Symbolizer([str(old_debug_dir)], cache=cache))
        assert [(f.function, f.line) for f in frames] == [("symlib_store", FAULT_LINE), ("symlib_entry", CALL_LINE)]
        assert all(not f.reliable for f in frames)  # the file here is still another build
        assert any("named from its debug file" in w for w in warnings), warnings


def test_rebuilt_library_through_the_cli(rebuilt, tmp_path):
    case, _, _ = rebuilt
    run = run_cli(
        str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-",
        env={"COREANALYZE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert run.code == 0, run.stderr
    lib = next(m for m in run.json["modules"] if m["path"] == str(case.lib))
    assert lib["status"] == "mismatch"
    frames = [f for f in crashed_thread(run.json)["frames"] if f["module"] == str(case.lib)]
    assert frames and all(f["reliable"] is False and f["function"] is None for f in frames), frames
    assert any("not the build that crashed" in w for w in run.json["warnings"]), run.json["warnings"]


# ------------------------------------------------------------------------- sysroot


@pytest.fixture(scope="module")
def moved(root):
    """Crashed; then the program and its library were moved under SYSROOT/<original path>."""
    case = crash(root, "moved")
    sysroot = root / "sysroot"
    for original in (case.exe, case.lib):
        placed = sysroot / str(original).lstrip("/")
        placed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(original, placed)
        original.unlink()
    return case, sysroot


def test_sysroot_modules_and_frames(moved, cache):
    case, sysroot = moved
    with read_core(case.core) as notes:
        assert module_of(notes_report(notes), str(case.lib)).status == "missing"
        report = notes_report(notes, sysroot=str(sysroot))
        lib = module_of(report, str(case.lib))
        assert (lib.status, lib.local_path) == ("ok", str(sysroot / str(case.lib).lstrip("/")))
        improve_frames(report, sysroot=str(sysroot), notes=notes, symbolizer=Symbolizer(sysroot=str(sysroot), cache=cache))
        top = report.crashed_thread.frames[0]
        assert (top.function, top.line) == ("symlib_store", FAULT_LINE)

        local_exe = sysroot / str(case.exe).lstrip("/")
        report = gdb_report(notes, case, executable=local_exe, sysroot=str(sysroot))
        improve_frames(report, sysroot=str(sysroot), notes=notes, symbolizer=Symbolizer(sysroot=str(sysroot), cache=cache))
        names = [f.function for f in report.crashed_thread.frames[:3]]
        assert names == ["symlib_store", "symlib_entry", "main"]
        assert all(f.reliable for f in report.crashed_thread.frames[:3])


def test_sysroot_through_the_cli(moved, tmp_path):
    case, sysroot = moved
    run = run_cli(
        str(case.core), "--sysroot", str(sysroot), "--format", "json", "-o", "-",
        env={"COREANALYZE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert run.code == 0, run.stderr
    frames = crashed_thread(run.json)["frames"]
    assert [(f["function"], f["line"]) for f in frames[:3]] == [
        ("symlib_store", FAULT_LINE), ("symlib_entry", CALL_LINE), ("main", marker_main_line())
    ]
    statuses = {m["path"]: m["status"] for m in run.json["modules"]}
    assert statuses[str(case.lib)] == statuses[str(case.exe)] == "ok"


def marker_main_line() -> int:
    for number, text in enumerate(MAIN_SOURCE.read_text().splitlines(), start=1):
        if "symlib_entry(NULL" in text:
            return number
    raise AssertionError("the call is not in symlib_main.c")


# ------------------------------------------------------------------------- the index cache


def test_second_symbolizer_reads_the_cached_index_not_the_elf(by_build_id, cache):
    case, debug_dir, target = by_build_id
    with read_core(case.core) as notes:
        report = notes_report(notes)
    top_pc = report.crashed_thread.frames[0].pc
    start = module_of(report, str(case.lib)).start
    address = top_pc - start  # a shared library's first segment is at file address 0

    first = Symbolizer([str(debug_dir)], cache=cache)
    answer = first.symbolize(str(case.lib), case.build_id, address)
    assert (answer.name, answer.line) == ("symlib_store", FAULT_LINE)
    assert set(first.indexed) == {str(case.lib), str(target)}
    image_index = first.index_path(case.build_id, "image")
    debug_index = first.index_path(case.build_id, "debug")
    assert image_index.is_file() and debug_index.is_file()
    first.close()

    second = Symbolizer([str(debug_dir)], cache=cache)
    assert second.symbolize(str(case.lib), case.build_id, address) == answer
    assert second.opened == [] and second.indexed == []
    second.close()


def test_a_cache_entry_of_another_build_is_not_trusted(by_build_id, rebuilt, cache):
    case, debug_dir, _ = by_build_id
    other, _, _ = rebuilt
    with read_core(case.core) as notes:
        report = notes_report(notes)
    address = report.crashed_thread.frames[0].pc - module_of(report, str(case.lib)).start
    # An index of another library placed under this build-id's name.
    other_symbolizer = Symbolizer(cache=cache)
    other_symbolizer.symbolize(str(other.lib), None, 0x1000)
    other_index = other_symbolizer.index_path(elf_build_id(other.lib), "image")
    forged = other_symbolizer.index_path(case.build_id, "image")
    forged.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(other_index, forged)

    s = Symbolizer([str(debug_dir)], cache=cache)
    answer = s.symbolize(str(case.lib), case.build_id, address)
    assert (answer.name, answer.line) == ("symlib_store", FAULT_LINE)
    assert str(case.lib) in s.indexed  # rebuilt from the real file
    assert any("built for another file" in w for w in s.warnings), s.warnings

    # A damaged index is ignored and rebuilt too.
    s.close()
    index = s.index_path(case.build_id, "debug")
    data = index.read_bytes()
    index.write_bytes(data[: len(data) // 3])
    again = Symbolizer([str(debug_dir)], cache=cache)
    assert again.symbolize(str(case.lib), case.build_id, address) == answer
    assert any("damaged" in w for w in again.warnings), again.warnings


def test_symbolizer_refuses_a_file_of_another_build(rebuilt, cache):
    case, _, _ = rebuilt
    s = Symbolizer(cache=cache)
    # The crashed build-id, but the file here is the rebuilt one and no debug file is given.
    assert s.symbolize(str(case.lib), case.build_id, 0x1100) is None
    assert any("not used" in w for w in s.warnings), s.warnings


# ------------------------------------------------------------------------- TensorFlow scale


def tensorflow_library() -> Path:
    spec = importlib.util.find_spec("tensorflow")  # locates the package without importing it
    lib = Path(next(iter(spec.submodule_search_locations))) / "libtensorflow_cc.so.2" if spec else None
    if lib is None or not lib.is_file():
        missing("tensorflow-cpu (libtensorflow_cc.so.2)")
    return lib


KNOWN_TF_FUNCTION = "_ZN10tensorflow9LRNGradOpIN5Eigen16ThreadPoolDeviceEfE7ComputeEPNS_15OpKernelContextE"


def test_symbolize_in_libtensorflow_cc(cache):
    lib = tensorflow_library()
    with open(lib, "rb") as f:
        gnu_hash = ELFFile(f).get_section_by_name(".gnu.hash")
        symbol = gnu_hash.get_symbol(KNOWN_TF_FUNCTION)
    assert symbol is not None and symbol["st_size"] > 5
    address = symbol["st_value"] + 5

    started = time.perf_counter()
    cold = Symbolizer(cache=cache)
    answer = cold.symbolize(str(lib), None, address)
    cold_seconds = time.perf_counter() - started
    assert answer.raw_name == KNOWN_TF_FUNCTION
    assert answer.name == "tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)"
    assert answer.offset == 5
    assert cold.indexed == [str(lib)]
    cold.close()

    started = time.perf_counter()
    warm = Symbolizer(cache=cache)
    assert warm.symbolize(str(lib), None, address) == answer
    warm_seconds = time.perf_counter() - started
    assert warm.indexed == []  # answered from the cached index, the 790 MB file not parsed
    warm.close()
    print(f"\nlibtensorflow_cc.so.2 lookup: cold {cold_seconds:.2f}s (index built), warm {warm_seconds * 1000:.1f}ms")
