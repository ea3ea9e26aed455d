"""The fast path gives the same report as the plain one, on real cores.

Plain path: one gdb per core, reading every library itself. Fast path: libraries with many
symbols reach gdb as cached copies without symbol tables plus, per core, small files with the
symbols near the addresses gdb names (coreanalyze.gdb.fastlibs / minsyms / fastnames), and a
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
import struct
import subprocess
from pathlib import Path

import pytest

from coreanalyze.analyze import AnalyzeOptions, analyze_core
from coreanalyze.corefile import read_core
from coreanalyze.gdb.fastlibs import MIN_SYMBOLS, plan_fast_libraries
from coreanalyze.gdb.fastnames import FrameNamer
from coreanalyze.gdb.minsyms import SHT_DYNSYM, SHT_SYMTAB, ElfLayout
from coreanalyze.gdb.pool import GdbPool, OwnGdb
from coreanalyze.modules import module_table
from coregen import require, run_to_core

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

# Two PLT layouts: the classic lazy PLT, and the IBT one (names on .plt.sec slots).
LIBRARY_FLAGS = {
    "plain": ["-O0", "-fno-omit-frame-pointer"],
    "ibt": ["-O0", "-fno-omit-frame-pointer", "-fcf-protection=full", "-Wl,-z,ibtplt"],
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


def replaced(core: Path, exe: Path | None, min_symbols: int) -> list[str]:
    """Paths of the libraries the fast path hands to gdb as copies."""
    notes = read_core(str(core))
    try:
        plan = plan_fast_libraries(notes, module_table(notes, executable=str(exe) if exe else None), min_symbols=min_symbols)
        return [lib.path for lib in plan.libraries] if plan else []
    finally:
        notes.close()


# --------------------------------------------------------------------------- the C library


def test_copy_hides_symbol_tables_and_keeps_every_mapped_byte(fastlib):
    case = fastlib.core("plain", 1)
    notes = read_core(str(case.core))
    try:
        plan = plan_fast_libraries(notes, module_table(notes, executable=str(case.exe)), min_symbols=ALL)
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


@pytest.mark.parametrize("layout", ["plain", "ibt"])
@pytest.mark.parametrize("how", [1, 2, 3])
def test_report_is_the_same_with_the_library_replaced(fastlib, layout, how):
    case = fastlib.core(layout, how)
    assert any(p.endswith("libfastlib.so") for p in replaced(case.core, case.exe, ALL))
    plain = report(case.core, case.exe, fast=False)
    fast = report(case.core, case.exe, fast=True, min_symbols=ALL)
    assert any(f["function"] for t in plain["threads"] for f in t["frames"] if "libfastlib" in (f["module"] or ""))
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
    return sorted(base + a for a in out)


def compare_naming(core: Path, exe: Path | None, libraries: list[str], min_symbols: int, sample: int | None, tmp: Path) -> int:
    """gdb's view of many addresses in each library, with the library whole and replaced.

    Returns how many addresses were compared; any difference fails.
    """
    notes = read_core(str(core))
    try:
        plan = plan_fast_libraries(notes, module_table(notes, executable=str(exe) if exe else None), min_symbols=min_symbols)
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
        session = gdb.open_core(str(core), executable=str(exe) if exe else None, sysroot=plan.sysroot)
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


@pytest.mark.parametrize("layout", ["plain", "ibt"])
def test_gdb_names_every_address_as_with_the_whole_library(fastlib, layout, tmp_path):
    case = fastlib.core(layout, 1)
    compared = compare_naming(case.core, case.exe, ["libfastlib.so"], ALL, None, tmp_path)
    assert compared > 100


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
    compared = compare_naming(case.core, case.exe, libraries, MIN_SYMBOLS, 150, tmp_path)
    assert compared > 1000
