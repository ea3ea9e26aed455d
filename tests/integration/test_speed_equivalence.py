"""The fast path gives the same report as the plain one, on real cores.

Plain path: one gdb per core, reading every library itself. Fast path: libraries with many
symbols reach gdb as cached copies without symbol tables plus, per core, small files with the
symbols near the addresses gdb names (coreanalyze.gdb.libcopies: copies / symbolfiles / naming), and a
pooled gdb opens each core as a new inferior next to the libraries the previous core loaded
(coreanalyze.gdb.pool). Whole JSON reports must be equal; so must gdb's naming of every kind of
address (functions, file-local symbols, aliases, data, PLT and GOT slots), checked address by
address against a gdb that read the libraries whole.

A small C library stands in for TensorFlow's (the threshold on the number of symbols is set to
0 so that it is replaced); the tests marked `tf` run the same on a real TensorFlow core.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from support.coregen import run_to_core
from support.require import require

from coreanalyze.base import later
from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.gdb.libcopies.copies import FIRST_REACH, MIN_SYMBOLS, plan_fast_libraries
from coreanalyze.gdb.libcopies.naming import FrameNamer
from coreanalyze.gdb.libcopies.symbolfiles import SHT_DYNSYM, SHT_SYMTAB, ElfLayout
from coreanalyze.gdb.libraries import LibraryChoice
from coreanalyze.gdb.pool import GdbPool, OwnGdb
from coreanalyze.pipeline.analyze import AnalyzeOptions, analyze_core
from coreanalyze.process.process import Process

# A library whose symbols exercise gdb's naming rules: a file-local function, an alias (two
# names, one address), functions of its own called through its PLT, data objects, an unsized
# label. `crash(1)` faults in the file-local function, `crash(2)` overflows the stack calling
# through the PLT, `crash(3)` reads far past a table through the alias.
LIBRARY_SOURCE = r"""
#include <stddef.h>

int lookup_table[64] = {1, 2, 3};
static int hidden_counter;
const char *const greeting = "hello";

static int __attribute__((noinline)) local_reader(const int *p, long n) { return p[n] + hidden_counter; }

int __attribute__((noinline)) exported_reader(const int *p, long n) { return local_reader(p, n) + 1; }
int aliased_reader(const int *p, long n) __attribute__((alias("exported_reader")));

int __attribute__((noinline)) ping(int n);
int __attribute__((noinline)) pong(int n) { volatile int keep = n; return ping(keep + 1) + keep; }
int __attribute__((noinline)) ping(int n) { volatile int keep = n; return pong(keep + 1) + keep; }

__asm__(".text\n.globl fastlib_marker\nfastlib_marker:\n nop\n");

int crash(int how) {
    hidden_counter += how;
    if (how == 1)
        return exported_reader(NULL, 3);
    if (how == 2)
        return ping(0);
    return aliased_reader(lookup_table, 1L << 40);
}
"""

MAIN_SOURCE = r"""
#include <stdlib.h>
int crash(int how);
int main(int argc, char **argv) { return crash(argc > 1 ? atoi(argv[1]) : 1); }
"""

# Two PLT layouts: the classic lazy PLT, and the IBT one (names on .plt.sec slots); and a library
# with DWARF, which the symbol files carry (as a manylinux build carries its toolchain runtime's).
LIBRARY_FLAGS = {
    "plain": ["-O0", "-fno-omit-frame-pointer"],
    "ibt": ["-O0", "-fno-omit-frame-pointer", "-fcf-protection=full", "-Wl,-z,ibtplt"],
    "dwarf": ["-O0", "-g", "-fno-omit-frame-pointer"],
}
ALL = 0  # min_symbols that replaces any library with a symbol table


class FastlibCores:
    """The C crasher built per PLT layout, and its cores built on first use."""

    def __init__(self, root: Path):
        self.root = root
        self.cases: dict[tuple[str, int], object] = {}
        self.programs: dict[str, Path] = {}

    def program(self, layout: str) -> Path:
        if layout not in self.programs:
            cc = require("gcc")
            out = self.root / layout
            out.mkdir(parents=True, exist_ok=True)
            (out / "fastlib.c").write_text(LIBRARY_SOURCE)
            (out / "main.c").write_text(MAIN_SOURCE)
            flags = LIBRARY_FLAGS[layout]
            subprocess.run([cc, "-shared", "-fPIC", *flags, "-o", str(out / "libfastlib.so"), str(out / "fastlib.c")], check=True)
            subprocess.run(
                [cc, "-O0", "-o", str(out / "main"), str(out / "main.c"), f"-L{out}", "-lfastlib", "-Wl,-rpath,$ORIGIN"],
                check=True,
            )
            self.programs[layout] = out / "main"
        return self.programs[layout]

    def core(self, layout: str, how: int):
        key = (layout, how)
        if key not in self.cases:
            program = self.program(layout)
            self.cases[key] = run_to_core(f"fastlib-{layout}-{how}", [str(program), str(how)], self.root / f"{layout}-{how}")
        return self.cases[key]


@pytest.fixture(scope="module")
def fastlib(tmp_path_factory) -> FastlibCores:
    require("gdb")
    return FastlibCores(tmp_path_factory.mktemp("fastlib"))


def report(core: Path, exe: Path | None, *, fast: bool, pool: GdbPool | None = None, min_symbols: int | None = None) -> dict:
    options = AnalyzeOptions(python=str(exe) if exe else None, fast_libraries=fast, fast_libraries_min_symbols=min_symbols)
    return analyze_core(str(core), options, gdb_pool=pool).report.to_dict()


def assert_same_report(plain: dict, fast: dict) -> None:
    # Frames first: a difference there is the one worth reading.
    assert [t["tid"] for t in fast["threads"]] == [t["tid"] for t in plain["threads"]]
    for p, f in zip(plain["threads"], fast["threads"]):
        assert f["frames"] == p["frames"], f"thread {p['tid']}"
    assert fast["classification"] == plain["classification"]
    assert fast == plain


def build_id_of(path: Path) -> str:
    from coreanalyze.corefile.modules import elf_build_id

    found = elf_build_id(path)
    assert found
    return found


def replaced(core: Path, exe: Path | None, min_symbols: int) -> list[str]:
    """Paths of the libraries the fast path hands to gdb as copies."""
    notes = read_core(str(core))
    try:
        plan = plan_fast_libraries(Process(notes), module_table(notes, executable=str(exe) if exe else None), min_symbols=min_symbols)
        return [lib.path for lib in plan.libraries] if plan else []
    finally:
        notes.close()


# --------------------------------------------------------------------------- the C library


def test_copy_hides_symbol_tables_and_keeps_every_mapped_byte(fastlib):
    case = fastlib.core("plain", 1)
    notes = read_core(str(case.core))
    try:
        plan = plan_fast_libraries(Process(notes), module_table(notes, executable=str(case.exe)), min_symbols=ALL)
    finally:
        notes.close()
    assert plan is not None
    lib = next(lib for lib in plan.libraries if lib.path.endswith("libfastlib.so"))
    original, copy = ElfLayout.read(lib.local_path), ElfLayout.read(lib.copy)
    assert original.first_of_type(SHT_SYMTAB) is not None and original.first_of_type(SHT_DYNSYM) is not None
    assert copy.first_of_type(SHT_SYMTAB) is None and copy.first_of_type(SHT_DYNSYM) is None
    data_original, data_copy = Path(lib.local_path).read_bytes(), Path(lib.copy).read_bytes()
    assert len(data_copy) == len(data_original)
    for section in original.sections:
        if section.alloc and section.type != 8:  # every byte the process could have mapped
            span = slice(section.offset, section.offset + section.size)
            assert data_copy[span] == data_original[span], section.name
    # The sysroot serves the copy under the loader's name for the library.
    served = Path(plan.sysroot, lib.path.lstrip("/"))
    assert served.resolve() == Path(lib.copy).resolve()


def test_a_librarys_verdict_is_kept_until_the_file_changes(fastlib, tmp_path):
    """plan_fast_libraries keeps what a library's headers said per file version (a batch meets
    the same libraries in every core): the same file is not read again, a changed one is."""
    from coreanalyze.gdb.libcopies.copies import _candidate_layout

    library = tmp_path / "libfastlib.so"
    shutil.copyfile(fastlib.program("plain").parent / "libfastlib.so", library)
    first = _candidate_layout(str(library), ALL)
    assert first is not None and first.first_of_type(SHT_SYMTAB) is not None
    assert _candidate_layout(str(library), ALL) is first
    assert _candidate_layout(str(library), 10**9) is None  # another threshold, another verdict
    subprocess.run([require("strip"), str(library)], check=True)  # the same path, now without .symtab
    assert _candidate_layout(str(library), ALL) is None
    assert _candidate_layout(str(tmp_path / "absent.so"), ALL) is None


@pytest.mark.parametrize("layout", ["plain", "ibt", "dwarf"])
@pytest.mark.parametrize("how", [1, 2, 3])
def test_report_is_the_same_with_the_library_replaced(fastlib, layout, how):
    case = fastlib.core(layout, how)
    assert any(p.endswith("libfastlib.so") for p in replaced(case.core, case.exe, ALL))
    plain = report(case.core, case.exe, fast=False)
    fast = report(case.core, case.exe, fast=True, min_symbols=ALL)
    ours = [f for t in plain["threads"] for f in t["frames"] if "libfastlib" in (f["module"] or "")]
    assert any(f["function"] for f in ours)
    if layout == "dwarf":  # the library's DWARF reached gdb: its frames have their source lines
        assert any(f["file"] == "fastlib.c" or (f["file"] or "").endswith("/fastlib.c") for f in ours), ours
    assert_same_report(plain, fast)


def test_pooled_gdb_reports_each_core_as_a_fresh_gdb(fastlib, cores):
    sequence = [
        (fastlib.core("plain", 1).core, fastlib.core("plain", 1).exe),
        (fastlib.core("ibt", 2).core, fastlib.core("ibt", 2).exe),
        (cores.c_crash("null_thread").core, cores.c_crash("null_thread").exe),
        (fastlib.core("plain", 3).core, fastlib.core("plain", 3).exe),
        (fastlib.core("plain", 1).core, fastlib.core("plain", 1).exe),  # the same core again, warm
    ]
    expected = {str(core): report(core, exe, fast=False) for core, exe in sequence}
    with GdbPool(size=1) as pool:
        for core, exe in sequence:
            assert_same_report(expected[str(core)], report(core, exe, fast=True, pool=pool, min_symbols=ALL))
        assert pool.restarts == 0  # one gdb served every core


def _views(session, addresses: list[int]) -> list[str]:
    """What gdb shows for each address: two instructions from it and the address itself."""
    out = []
    for a in addresses:
        shown = []
        for command in (f"x/2i {a:#x}", f"output/a {a:#x}"):
            try:
                shown.append(session.console(command))
            except Exception as e:  # noqa: BLE001 — an unreadable address is a view too
                shown.append(f"error: {e}")
        out.append(" | ".join(shown))
    return out


def _addresses_of(path: str, base: int, sample: int | None, seed: int) -> list[int]:
    """Run-time addresses of every kind in a library: symbol starts, ends and middles, PLT and
    GOT slots, random places in each allocated section."""
    layout = ElfLayout.read(path)
    rng = random.Random(seed)
    out: set[int] = set()
    symtab = layout.first_of_type(SHT_SYMTAB)
    data = Path(path).read_bytes()[symtab.offset : symtab.offset + symtab.size]
    symbols = [struct.unpack_from("<IBBHQQ", data, i) for i in range(0, len(data), 24)]
    chosen = symbols if sample is None else rng.sample(symbols, min(sample, len(symbols)))
    for _name, _info, _other, shndx, value, size in chosen:
        if value and 0 < shndx < len(layout.sections):
            out.update({value, value + size, value + size // 2, value - 1})
    for section in layout.sections:
        if not section.alloc or not section.size:
            continue
        if section.name.startswith((".plt", ".got")):
            step = 8
            slots = range(section.addr, section.end, step)
            picked = slots if sample is None else rng.sample(list(slots), min(sample // 4 or 1, len(slots)))
            out.update(a + d for a in picked for d in (0, 1, 6))
        for _ in range(8 if sample is None else max(1, sample // 20)):
            out.add(section.addr + rng.randrange(section.size))
    # A copy may hide its unwind table's contents by design (gdb unwinds from the entries served
    # beside it: unwindtables.py); no analysis disassembles or names bytes there, whichever
    # sample (a symbol's end, a random place) lands in it.
    hidden = [(s.addr, s.end) for s in layout.sections if s.alloc and s.name == ".eh_frame"]
    return sorted(base + a for a in out if not any(lo <= a < hi for lo, hi in hidden))


def compare_naming(
    core: Path, exe: Path | None, libraries: list[str], min_symbols: int, sample: int | None, tmp: Path, *, copies: bool = True
) -> int:
    """gdb's view of many addresses in each library, with the library whole and replaced: by a
    copy (copies), or not read at all, its symbol and unwind files standing alone (the analysis's
    way when gdb reads only the libraries it is told to).

    Returns how many addresses were compared; any difference fails.
    """
    notes = read_core(str(core))
    try:
        process = Process(notes)
        table = module_table(notes, executable=str(exe) if exe else None)
        plan = plan_fast_libraries(process, table, min_symbols=min_symbols, copies=copies)
        choice = None
        if not copies and plan is not None:
            choice = LibraryChoice.for_process(process)
            choice.served = plan.served
    finally:
        notes.close()
    assert plan is not None
    libs = [lib for lib in plan.libraries if os.path.basename(lib.path) in libraries]
    assert len(libs) == len(set(libraries))
    addresses: list[int] = []
    for i, lib in enumerate(libs):
        addresses += _addresses_of(lib.local_path, lib.base, sample, seed=i)
    with OwnGdb(timeout=900) as whole:
        expected = _views(whole.open_core(str(core), executable=str(exe) if exe else None), addresses)
    with OwnGdb(timeout=900) as gdb:
        session = gdb.open_core(str(core), executable=str(exe) if exe else None, sysroot=plan.sysroot, libraries=choice)
        if choice is not None:
            choice.read_all(session)  # every other library, as the whole gdb: an address may name one
        namer = FrameNamer(plan, str(tmp))
        # What gdb will name, found as the analysis finds it: from gdb's own unnamed view.
        unnamed = _views(session, addresses)
        referenced = {int(h, 16) for text in unnamed for h in re.findall(r"0x[0-9a-f]+", text)}
        namer.attach(session, namer.by_library(set(addresses) | referenced))
        got = _views(session, addresses)
    plan.close()
    differing = [(hex(a), e, g) for a, e, g in zip(addresses, expected, got) if e != g]
    assert not differing, f"{len(differing)} of {len(addresses)} differ, e.g. {differing[:3]}"
    return len(addresses)


@pytest.mark.parametrize("copies", [True, False], ids=["copy", "not-read"])
@pytest.mark.parametrize("layout", ["plain", "ibt", "dwarf"])
def test_gdb_names_every_address_as_with_the_whole_library(fastlib, layout, copies, tmp_path):
    case = fastlib.core(layout, 1)
    compared = compare_naming(case.core, case.exe, ["libfastlib.so"], ALL, None, tmp_path, copies=copies)
    assert compared > 100


def test_without_copies_nothing_is_copied_and_the_entry_holds_the_order(fastlib, tmp_path, monkeypatch):
    """The analysis's way: the library's cache entry (keyed by build-id) holds its symbol order,
    a few bytes a symbol, and no copy of the library."""
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path / "cache"))
    case = fastlib.core("plain", 1)
    fast = report(case.core, case.exe, fast=True, min_symbols=ALL)
    assert fast == report(case.core, case.exe, fast=False)
    later.wait()  # the order is written for the next runs, beside this one
    entries = [p for p in (tmp_path / "cache").glob("libsymbols-v1/*/*") if p.is_dir()]
    assert entries and all((p / "symbols.order").is_file() for p in entries)
    assert not (tmp_path / "cache" / "fastlibs-v3").exists() and not (tmp_path / "cache" / "sysroots-v3").exists()
    library = fastlib.program("plain").parent / "libfastlib.so"
    assert any(p.name.startswith(build_id_of(library)[2:]) and p.parent.name == build_id_of(library)[:2] for p in entries)


def selected_against_whole(core: Path, exe: Path | None, libraries: list[str], min_symbols: int, sample: int | None, cache: Path,
                           reach: int, every_section: bool = True) -> int:  # fmt: skip
    """A first run's windows, selected around the addresses (the selection as wide as reach at
    first), against the windows of the whole order; returns how many addresses were compared."""
    notes = read_core(str(core))
    try:
        plan = plan_fast_libraries(Process(notes), module_table(notes, executable=str(exe) if exe else None),
                                   min_symbols=min_symbols, copies=False, cache_root=cache)  # fmt: skip
    finally:
        notes.close()
    assert plan is not None
    compared = 0
    try:
        for i, lib in enumerate(lib for lib in plan.libraries if os.path.basename(lib.path) in libraries):
            wanted = sorted({a - lib.base for a in _addresses_of(lib.local_path, lib.base, sample, seed=i)})
            # Code addresses (what stacks hold) are found in a selection; an address far into a
            # section of sparse symbols may have the whole table sorted after all.
            text = lib.layout.by_name(".text")
            code = [a for a in wanted if text.addr <= a < text.end]
            selected = lib._selected_windows(code, reach)
            assert selected is not None and len(code) > 10, lib.path
            windows = lib.windows(wanted) if every_section else None
            whole = lib.symbols()
            differing = [hex(a) for a in code if selected[a] != whole.window(a)]
            assert not differing, f"{lib.path}: {len(differing)} of {len(code)} differ, e.g. {differing[:5]}"
            if every_section:  # (a window far into sparse data walks up to 50,000 symbols)
                assert windows == [s for a in wanted for s in whole.window(a)]
            compared += len(wanted) if every_section else len(code)
    finally:
        plan.close()
    return compared


@pytest.mark.parametrize("reach", [64, FIRST_REACH], ids=["narrow", "first"])
@pytest.mark.parametrize("layout", ["plain", "ibt"])
def test_a_first_runs_selected_windows_are_the_whole_orders(fastlib, layout, reach, tmp_path):
    case = fastlib.core(layout, 1)
    assert selected_against_whole(case.core, case.exe, ["libfastlib.so"], ALL, None, tmp_path / "cache", reach) > 100


# --------------------------------------------------------------------------- TensorFlow


@pytest.mark.tf
def test_tf_report_is_the_same_fast_and_pooled(tf_cores):
    first = tf_cores.get("kernel_check_failure")
    second = tf_cores.get("kernel_compute_segv")
    assert any("libtensorflow_cc" in p for p in replaced(second.core, second.exe, MIN_SYMBOLS))
    plain = {case.name: report(case.core, case.exe, fast=False) for case in (first, second)}
    assert_same_report(plain[second.name], report(second.core, second.exe, fast=True))
    with GdbPool(size=1) as pool:
        for case in (first, second, first):  # the second and third open next to loaded libraries
            assert_same_report(plain[case.name], report(case.core, case.exe, fast=True, pool=pool))
        assert pool.restarts == 0


@pytest.mark.tf
def test_tf_gdb_names_addresses_as_with_the_whole_libraries(tf_cores, tmp_path):
    case = tf_cores.get("kernel_compute_segv")
    libraries = [os.path.basename(p) for p in replaced(case.core, case.exe, MIN_SYMBOLS)]
    assert {"libtensorflow_cc.so.2", "libtensorflow_framework.so.2"} <= set(libraries)
    # TensorFlow's own libraries: the other replaced libraries (NumPy's, SciPy's bundled BLAS)
    # change with every resolver run of the environment and are compared in the fastlib tests.
    tensorflow = [name for name in libraries if name.startswith("libtensorflow")]
    compared = compare_naming(case.core, case.exe, tensorflow, MIN_SYMBOLS, 150, tmp_path, copies=False)
    assert compared > 1000


@pytest.mark.tf
def test_tf_first_runs_selected_windows_are_the_whole_orders(tf_cores, tmp_path):
    case = tf_cores.get("kernel_compute_segv")
    tensorflow = ["libtensorflow_cc.so.2", "libtensorflow_framework.so.2"]
    for reach in (256, FIRST_REACH):
        compared = selected_against_whole(case.core, case.exe, tensorflow, MIN_SYMBOLS, 400, tmp_path / f"cache{reach}", reach, False)
        assert compared > 1000


# --------------------------------------------------------------------------- raw ELF header reads
#
# Build-ids, DT_NEEDED lists and debuglinks are read with struct (coreanalyze.base.elfheaders); the
# answers must be pyelftools' for every well-formed file. The pyelftools readers below are the
# ones the tool used before.


def pyelftools_build_id(path) -> str | None:
    from elftools.elf.elffile import ELFFile

    from coreanalyze.corefile import PARSE_ERRORS
    from coreanalyze.corefile.modules import MAX_HEADERS_SCANNED, _build_id_in

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            f.seek(0)
            elf = ELFFile(f)
            for i in range(min(elf.num_segments(), MAX_HEADERS_SCANNED)):
                segment = elf.get_segment(i)
                if segment["p_type"] == "PT_NOTE":
                    found = _build_id_in(f, segment["p_offset"], segment["p_filesz"], segment["p_align"], elf.little_endian)
                    if found:
                        return found
            for i in range(min(elf.num_sections(), MAX_HEADERS_SCANNED)):
                section = elf.get_section(i)
                if section["sh_type"] == "SHT_NOTE":
                    found = _build_id_in(f, section["sh_offset"], section["sh_size"], section["sh_addralign"], elf.little_endian)
                    if found:
                        return found
    except (OSError, *PARSE_ERRORS):
        return None
    return None


def pyelftools_needed(path) -> list[str] | None:
    from elftools.elf.elffile import ELFFile

    from coreanalyze.corefile import PARSE_ERRORS
    from coreanalyze.corefile.modules import MAX_HEADERS_SCANNED, MAX_NEEDED

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            f.seek(0)
            elf = ELFFile(f)
            for i in range(min(elf.num_segments(), MAX_HEADERS_SCANNED)):
                segment = elf.get_segment(i)
                if segment["p_type"] == "PT_DYNAMIC":
                    return [t.needed for t in segment.iter_tags("DT_NEEDED")][:MAX_NEEDED]
            return []
    except (*PARSE_ERRORS, OSError):
        return None


def pyelftools_debuglink(path):
    from elftools.elf.elffile import ELFFile

    from coreanalyze.corefile import PARSE_ERRORS
    from coreanalyze.symbols.locate import MAX_DEBUGLINK_BYTES, _parse_debuglink

    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            f.seek(0)
            elf = ELFFile(f)
            for i in range(min(elf.num_sections(), 4096)):
                section = elf.get_section(i)
                if section.name != ".gnu_debuglink":
                    continue
                size = section["sh_size"]
                if not 5 < size <= MAX_DEBUGLINK_BYTES:
                    return None
                f.seek(section["sh_offset"])
                return _parse_debuglink(f.read(size), elf.little_endian)
    except (OSError, *PARSE_ERRORS):
        return None
    return None


def raw_reads(path) -> tuple:
    from coreanalyze.corefile.modules import _read_build_id, _read_needed
    from coreanalyze.symbols.locate import _read_debuglink

    return _read_build_id(str(path)), _read_needed(str(path)), _read_debuglink(str(path))


def pyelftools_reads(path) -> tuple:
    return pyelftools_build_id(path), pyelftools_needed(path), pyelftools_debuglink(path)


def synthetic_elf(is64: bool, little: bool, *, section_headers: bool = True) -> bytes:
    """A small shared object of any ELF class and byte order with a build-id note, two
    DT_NEEDED entries and a .gnu_debuglink (the toolchain here makes only little-endian ones)."""
    e = "<" if little else ">"
    word = "Q" if is64 else "I"
    ehsize, phentsize, shentsize = (64, 56, 64) if is64 else (52, 32, 40)
    build_id = bytes(range(20))
    note = struct.pack(e + "III", 4, len(build_id), 3) + b"GNU\0" + build_id
    dynstr = b"\0libfirst.so.1\0libsecond.so\0"
    link_name = b"synthetic.debug\0"
    debuglink = link_name + b"\0" * (-len(link_name) % 4) + struct.pack(e + "I", 0x1234ABCD)
    shstrtab = b"\0.note.gnu.build-id\0.dynstr\0.dynamic\0.gnu_debuglink\0.shstrtab\0"
    names = {n: shstrtab.index(n.encode() + b"\0") for n in (".note.gnu.build-id", ".dynstr", ".dynamic", ".gnu_debuglink", ".shstrtab")}
    phnum = 3
    offset = ehsize + phnum * phentsize
    layout = {}
    for name, data in ((".note.gnu.build-id", note), (".dynstr", dynstr)):
        layout[name] = (offset, data)
        offset += len(data) + (-(offset + len(data)) % 8)
    dyn_fmt = e + ("qQ" if is64 else "iI")
    dynamic = b"".join(
        struct.pack(dyn_fmt, tag, value)
        for tag, value in ((1, 1), (1, 15), (5, layout[".dynstr"][0]), (0, 0))
    )
    for name, data in ((".dynamic", dynamic), (".gnu_debuglink", debuglink), (".shstrtab", shstrtab)):
        layout[name] = (offset, data)
        offset += len(data) + (-(offset + len(data)) % 8)
    shoff = offset if section_headers else 0
    sections = [
        (0, 0, 0, 0, 0, 0),
        (names[".note.gnu.build-id"], 7, layout[".note.gnu.build-id"][0], len(note), 0, 4),
        (names[".dynstr"], 3, layout[".dynstr"][0], len(dynstr), 0, 1),
        (names[".dynamic"], 6, layout[".dynamic"][0], len(dynamic), 2, 8),
        (names[".gnu_debuglink"], 1, layout[".gnu_debuglink"][0], len(debuglink), 0, 4),
        (names[".shstrtab"], 3, layout[".shstrtab"][0], len(shstrtab), 0, 1),
    ]
    machine = (62 if little else 21) if is64 else (3 if little else 20)
    header = b"\x7fELF" + bytes([2 if is64 else 1, 1 if little else 2, 1, 0]) + b"\0" * 8
    header += struct.pack(
        e + "HHI" + word * 3 + "IHHHHHH", 3, machine, 1, 0, ehsize, shoff, 0, ehsize, phentsize, phnum,
        shentsize, len(sections) if section_headers else 0, 5 if section_headers else 0,
    )  # fmt: skip
    end = offset + (len(sections) * shentsize if section_headers else 0)
    segments = [(1, 0, 0, end, 4096), (2, layout[".dynamic"][0], layout[".dynamic"][0], len(dynamic), 8),
                (4, layout[".note.gnu.build-id"][0], layout[".note.gnu.build-id"][0], len(note), 4)]  # fmt: skip
    program = b""
    for p_type, p_offset, p_vaddr, p_size, p_align in segments:
        if is64:
            program += struct.pack(e + "IIQQQQQQ", p_type, 4, p_offset, p_vaddr, p_vaddr, p_size, p_size, p_align)
        else:
            program += struct.pack(e + "IIIIIIII", p_type, p_offset, p_vaddr, p_vaddr, p_size, p_size, 4, p_align)
    body = bytearray(header + program)
    for off, data in layout.values():
        body += b"\0" * (off - len(body)) + data
    body += b"\0" * (offset - len(body))
    if section_headers:
        for name, sh_type, sh_offset, sh_size, sh_link, sh_align in sections:
            if is64:
                body += struct.pack(e + "IIQQQQIIQQ", name, sh_type, 2 if sh_type in (3, 6, 7) else 0, sh_offset, sh_offset, sh_size, sh_link, 0, sh_align, 16 if sh_type == 6 else 0)
            else:
                body += struct.pack(e + "IIIIIIIIII", name, sh_type, 2 if sh_type in (3, 6, 7) else 0, sh_offset, sh_offset, sh_size, sh_link, 0, sh_align, 8 if sh_type == 6 else 0)
    return bytes(body)


@pytest.mark.parametrize("is64", [True, False], ids=["elf64", "elf32"])
@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("section_headers", [True, False], ids=["sections", "stripped-headers"])
def test_raw_elf_reads_of_every_class_and_byte_order(tmp_path, is64, little, section_headers):
    path = tmp_path / "synthetic.so"
    path.write_bytes(synthetic_elf(is64, little, section_headers=section_headers))
    got = raw_reads(path)
    assert got == pyelftools_reads(path)
    build_id, needed, link = got
    assert build_id == bytes(range(20)).hex()
    assert needed == ["libfirst.so.1", "libsecond.so"]  # without sections: through DT_STRTAB
    if section_headers:
        assert (link.name, link.crc) == ("synthetic.debug", 0x1234ABCD)
    else:
        assert link is None


def _elf_files(directory: Path, limit: int) -> list[Path]:
    out = []
    for path in sorted(directory.iterdir()):
        try:
            if path.is_file() and not path.is_symlink() and path.open("rb").read(4) == b"\x7fELF":
                out.append(path)
        except OSError:
            continue
        if len(out) >= limit:
            break
    return out


def test_raw_elf_reads_agree_with_pyelftools_on_real_files(cores, tmp_path):
    files: set[Path] = set()
    for name in ("null_thread", "assert_fail"):
        case = cores.c_crash(name)
        with read_core(str(case.core)) as notes:
            files.update(Path(m.path) for m in notes.mappings if m.path.startswith("/") and os.path.isfile(m.path))
    files.update(_elf_files(Path("/usr/lib/x86_64-linux-gnu"), 150))
    debug_root = Path("/usr/lib/debug/.build-id")
    if debug_root.is_dir():  # separate debug files: notes in sections, no program text
        for sub in sorted(debug_root.iterdir())[:20]:
            files.update(_elf_files(sub, 2) if sub.is_dir() else [])
    # 32-bit shared objects, one needing the other, one with a debuglink.
    gcc, ld, objcopy = require("gcc"), require("ld"), require("objcopy")
    (tmp_path / "a.c").write_text("int a(int x) { return x + 1; }\n")
    (tmp_path / "b.c").write_text("int b(int x) { return x * 2; }\n")
    for stem in ("a", "b"):
        subprocess.run([gcc, "-c", "-fPIC", "-o", str(tmp_path / f"{stem}.o"), str(tmp_path / f"{stem}.c")], check=True)
        subprocess.run([objcopy, "-O", "elf32-i386", str(tmp_path / f"{stem}.o"), str(tmp_path / f"{stem}32.o")], check=True)
    subprocess.run([ld, "-m", "elf_i386", "-shared", "--build-id", "-o", str(tmp_path / "libb32.so"), str(tmp_path / "b32.o")], check=True)
    subprocess.run([ld, "-m", "elf_i386", "-shared", "--build-id", "-o", str(tmp_path / "liba32.so"), str(tmp_path / "a32.o"), str(tmp_path / "libb32.so")], check=True)
    subprocess.run([objcopy, f"--add-gnu-debuglink={tmp_path / 'a.c'}", str(tmp_path / "liba32.so"), str(tmp_path / "liba32-linked.so")], check=True)
    files.update(tmp_path / n for n in ("libb32.so", "liba32.so", "liba32-linked.so"))
    assert raw_reads(tmp_path / "liba32-linked.so")[1] == [str(tmp_path / "libb32.so")]

    differing = [(str(p), raw_reads(p), pyelftools_reads(p)) for p in sorted(files) if raw_reads(p) != pyelftools_reads(p)]
    assert not differing, differing[:3]
    found = [raw_reads(p) for p in files]
    assert sum(1 for b, _, _ in found if b) > 50 and sum(1 for _, n, _ in found if n) > 50


def pyelftools_defined_symbols(path, section_name) -> dict[str, int]:
    """The interpreter's symbols as the in-process walker read them with pyelftools before."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    out: dict[str, int] = {}
    with open(path, "rb") as f:
        section = ELFFile(f).get_section_by_name(section_name)
        if isinstance(section, SymbolTableSection):
            for symbol in section.iter_symbols():
                if symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_value"] and symbol.name:
                    out.setdefault(symbol.name, symbol["st_value"])
    return out


def test_raw_symbol_tables_agree_with_pyelftools(cores):
    """The symbol tables the in-process walker searches (_PyRuntime, Py_Version), read with
    struct: the interpreters here, the crasher's libraries, each table as pyelftools reads it."""
    from support.pythons import SYSTEM_PYTHON, pyenv_python

    from coreanalyze.symbols.process import read_symbols as _read_symbols

    files = {Path(os.path.realpath(p)) for p in [SYSTEM_PYTHON, *(pyenv_python(m) for m in ("10", "11", "12", "13"))] if p}
    with read_core(str(cores.c_crash("null_thread").core)) as notes:
        files.update(Path(m.path) for m in notes.mappings if m.path.startswith("/") and os.path.isfile(m.path))
    differing = [
        (str(p), section) for p in sorted(files) for section in (".dynsym", ".symtab")
        if _read_symbols(str(p), section) != pyelftools_defined_symbols(p, section)
    ]  # fmt: skip
    assert not differing
    assert any("_PyRuntime" in _read_symbols(str(p), ".dynsym") for p in files)


def test_raw_elf_reads_of_damaged_files_end_in_none_not_errors(cores, tmp_path):
    """A cut or corrupted library: each read answers (maybe None) without raising."""
    case = cores.c_crash("null_thread")
    with read_core(str(case.core)) as notes:
        libc = next(m.path for m in notes.mappings if "libc.so" in m.path)
    data = Path(libc).read_bytes()
    shoff = struct.unpack_from("<Q", data, 40)[0]
    variants = {f"cut-{n}": data[:n] for n in (5, 63, 64, 100, 700, 4096, shoff + 10, len(data) - 1)}
    for field_offset, value in ((40, len(data) + 99), (40, 2**63), (58, 1), (60, 0xFFFF), (62, 0xFFFF), (54, 1), (56, 0xFFFF)):
        changed = bytearray(data)
        struct.pack_into("<Q" if field_offset in (32, 40) else "<H", changed, field_offset, value)
        variants[f"field-{field_offset}-{value}"] = bytes(changed)
    for name, content in variants.items():
        path = tmp_path / name
        path.write_bytes(content)
        build_id, needed, link = raw_reads(path)
        assert build_id is None or re.fullmatch(r"[0-9a-f]+", build_id), name
        assert needed is None or all(isinstance(n, str) for n in needed), name
        assert link is None or link.name, name


# --------------------------------------------------------------------------- the MI parser
#
# gdb's MI lines are parsed by coreanalyze.gdb.miparse into pygdbmi's records; here both parse
# what a real gdb printed for a core, and lines made to reach every corner of the grammar.

MI_COMMANDS = [
    "-list-features",
    "-thread-info",
    "-stack-list-frames",
    "-data-list-register-names",
    "-data-list-register-values x 0 1 2 3",
    '-interpreter-exec console "info proc mappings"',
    '-interpreter-exec console "info sharedlibrary"',
    "-file-list-shared-libraries",
    "-data-disassemble -s $pc -e $pc+32 -- 0",
    '-data-evaluate-expression "$_siginfo"',
    '-data-evaluate-expression "\\"caf\\303\\251\\\\n\\""',
    "-stack-list-variables --all-values",
    '-interpreter-exec console "x/8s $sp"',
    "-no-such-command",
]

MADE_UP_LINES = [
    '^done,a="1",a="2",a="3"',
    '^done,a=["x"],a="y"',
    '^done,list=[frame={level="0"},frame={level="1"}],empty=[],tuple={},nested={x=[{y="z"}]}',
    '^done,values=["a","b",{c="d"}]',
    '~"plain"',
    '~""',
    '~"tab\\there\\n"',
    '~"octal \\303\\251 and \\101\\102"',
    '~"bad utf-8 \\377\\376 kept"',
    '~"\\e[31mred\\e[0m \\a\\b\\f\\r \\\' \\\\ \\""',
    '&"warning: something\\n"',
    '@"target output"',
    '~"unescaped " quote"',
    '~"unknown \\q escape"',
    '~"octal too big \\777"',
    '~"no closing quote',
    '~"trailing" after',
    "=library-loaded,id=\"/lib/x.so\",ranges=[{from=\"0x1\",to=\"0x2\"}]",
    "*stopped,reason=\"signal-received\",frame={addr=\"0x0\"}",
    "12^error,msg=\"No symbol \\\"x\\\" in current context.\"",
    "7^done",
    "^done,",
    "^done, spaced=\"1\"",
    "^done,key=\"value\"}",
    "^done,key=\"value\",",
    "^done,weird key=\"1\"",
    "^running",
    "(gdb) ",
    "plain text from a program",
    "",
]


def _pygdbmi_or_error(line: str):
    from pygdbmi import gdbmiparser

    try:
        return gdbmiparser.parse_response(line)
    except Exception as e:  # noqa: BLE001 — the error itself is compared
        return ("error", type(e))


def _ours_or_error(line: str):
    from coreanalyze.gdb import miparse

    try:
        return miparse.parse_response(line)
    except Exception as e:  # noqa: BLE001
        return ("error", type(e))


def test_mi_parser_gives_pygdbmi_records(cores):
    gdb = require("gdb")
    case = cores.c_crash("null_thread")
    script = "\n".join(MI_COMMANDS + ["-gdb-exit"]) + "\n"
    run = subprocess.run(
        [gdb, "--interpreter=mi3", "-nx", "-nh", "-q", str(case.exe), str(case.core)],
        input=script.encode(),
        capture_output=True,
        timeout=120,
    )
    lines = [raw.decode(errors="replace").rstrip("\r") for raw in run.stdout.split(b"\n")]
    assert sum(1 for line in lines if line.startswith("=library-loaded")) >= 2
    assert any("stack=[frame={" in line for line in lines)
    for line in lines + MADE_UP_LINES:
        assert _ours_or_error(line) == _pygdbmi_or_error(line), line


# --------------------------------------------------------------------------- abort messages
#
# Far memory is not searched for a fault the kernel raised; a process that aborted is searched
# as before, and a message found near the crash ends the search with the same answer.

FAR_MESSAGE_SOURCE = r"""
#include <signal.h>
#include <stdlib.h>
#include <string.h>

char *far_text;

static void __attribute__((noinline)) leave_old_text(void) {
    /* An 8 MiB buffer (its own mapping, far from the stack) holding a fatal-looking line. */
    far_text = malloc(8 << 20);
    memset(far_text, 'x', 8 << 20);
    const char line[] = "F0000 00:00:1712345678.123456  4242 widget.cc:12] Check failed: widget != nullptr (0 vs. 1)";
    char *at = far_text + (4 << 20);
    at[-1] = '\0';
    memcpy(at, line, sizeof line);
    far_text = (char *)((unsigned long)far_text ^ 0x5a5a5a5a);  /* no plain pointer to it is left */
}

int main(int argc, char **argv) {
    leave_old_text();
    if (argc > 1 && strcmp(argv[1], "abort") == 0)
        abort();
    *(volatile int *)0 = 1;
    return 0;
}
"""


@pytest.fixture(scope="module")
def far_message_cores(tmp_path_factory):
    from support.coregen import compile_c

    require("gcc")
    workdir = tmp_path_factory.mktemp("far-message")
    source = workdir / "far_message.c"
    source.write_text(FAR_MESSAGE_SOURCE)
    exe = compile_c(source, workdir / "far_message")
    return {how: run_to_core(f"far-message-{how}", [str(exe), how], workdir / how) for how in ("segv", "abort")}


def test_a_kernel_fault_is_not_explained_by_text_far_in_the_heap(far_message_cores):
    from coreanalyze.classify.abortmsg import find_abort_message, scan_abort_messages

    segv, aborted = far_message_cores["segv"], far_message_cores["abort"]
    for case in (segv, aborted):
        with read_core(str(case.core)) as notes:
            sp = notes.thread(notes.crashing_tid).registers["rsp"]
            everywhere = scan_abort_messages(notes.memory, sp)
            assert [m.where for m in everywhere if "widget != nullptr" in m.text] == ["writable-memory"]
            found = find_abort_message(notes.memory, sp, notes.signal)
            if case is segv:
                assert (notes.signal.name, notes.signal.code) == ("SIGSEGV", 1)
                assert found is None
            else:
                assert notes.signal.name == "SIGABRT"
                assert found is not None and "Check failed: widget != nullptr" in found
    segv_report = report(segv.core, segv.exe, fast=True)
    assert segv_report["classification"]["fault_kind"] == "null-deref"
    assert not segv_report["classification"]["abort_message"]
    abort_report = report(aborted.core, aborted.exe, fast=True)
    assert "widget != nullptr" in abort_report["classification"]["abort_message"]


@pytest.mark.parametrize("crasher", ["assert_fail", "double_free"])
def test_a_message_found_near_the_crash_ends_the_search_with_the_same_answer(cores, crasher):
    from coreanalyze.classify.abortmsg import find_abort_message, scan_abort_messages

    case = cores.c_crash(crasher)
    with read_core(str(case.core)) as notes:
        sp = notes.thread(notes.crashing_tid).registers["rsp"]
        everywhere = scan_abort_messages(notes.memory, sp)
        near = scan_abort_messages(notes.memory, sp, far_unless_found_near=True)
        assert near and near[0].where != "writable-memory"
        assert near[0] == everywhere[0]
        assert find_abort_message(notes.memory, sp, notes.signal) == everywhere[0].text


# --------------------------------------------------------------------------- compiled templates


def test_reports_render_the_same_from_compiled_templates(cores, tmp_path, monkeypatch):
    from coreanalyze.render import render, templating

    case = cores.c_crash("assert_fail")
    result = analyze_core(str(case.core), AnalyzeOptions(python=str(case.exe)))
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path / "cache"))

    def fresh_render() -> tuple[str, str]:
        templating.html_environment.cache_clear()
        templating.markdown_environment.cache_clear()
        return render(result.report, "html"), render(result.report, "markdown")

    try:
        first = fresh_render()  # compiles and keeps the templates
        kept = sorted((tmp_path / "cache").glob("templates-*/*"))
        assert len(kept) >= 3 and {p.parent.name.split("-")[1] for p in kept} == {"html", "markdown"}
        assert fresh_render() == first  # from the kept code
        for p in kept:
            p.write_bytes(b"damaged")
        assert fresh_render() == first  # a damaged entry is compiled again
        for d in {p.parent for p in kept}:
            d.chmod(0o500)
        assert fresh_render() == first  # a cache that cannot be written is no error
    finally:
        for d in (tmp_path / "cache").glob("templates-*"):
            d.chmod(0o700)
        templating.html_environment.cache_clear()
        templating.markdown_environment.cache_clear()
