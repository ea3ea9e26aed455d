"""The core-notes reader on real kernel cores: identity, signal, threads, memory, bad input."""

from __future__ import annotations

import os
import platform
import random
import shlex
import shutil
import signal
import struct
from pathlib import Path

import pytest
from support.coregen import compile_c, run_to_core
from support.paths import CRASHERS

from coreanalyze.base import model
from coreanalyze.base.errors import BadInput
from coreanalyze.corefile import parse_notes, read_core, threads_from_notes, to_core_info
from coreanalyze.corefile.memory import MAX_READ
from coreanalyze.corefile.modules import elf_build_id, module_table
from coreanalyze.corefile.tables import PSARGS_LEN

ARCH = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(platform.machine())


@pytest.fixture(scope="module")
def null_thread(cores):
    case = cores.c_crash("null_thread")
    with read_core(case.core) as notes:
        yield case, notes


# -- identity, threads, registers ----------------------------------------------------------------


def test_identity_of_the_crashed_process(null_thread):
    case, notes = null_thread
    if case.pid is not None:
        assert notes.pid == case.pid
    assert notes.arch == ARCH
    assert notes.executable == str(case.exe)
    assert notes.argv == case.argv
    assert notes.cmdline == shlex.join(case.argv)
    assert notes.uid == os.getuid() and notes.gid == os.getgid()
    assert notes.ppid == os.getpid() or case.method == "gdb"
    assert notes.warnings == []


def test_threads_and_the_crashing_thread(null_thread):
    case, notes = null_thread
    assert len(notes.threads) == 2
    tids = {t.tid for t in notes.threads}
    assert notes.pid in tids
    # The worker thread faulted, not the main thread waiting in pthread_join.
    assert notes.crashing_tid in tids and notes.crashing_tid != notes.pid
    crashing = notes.thread(notes.crashing_tid)
    pc = crashing.registers[notes.pc_register]
    mapping = notes.mapping_containing(pc)
    assert mapping is not None and mapping.path == str(case.exe)
    assert notes.memory.segment_containing(pc).executable
    # The stack pointer points into memory the core holds.
    assert notes.memory.is_present(crashing.registers[notes.sp_register])
    for thread in notes.threads:
        assert thread.cursig == signal.SIGSEGV
        assert {notes.pc_register, notes.sp_register} <= thread.registers.keys()


def test_signal_of_a_null_dereference(null_thread):
    _, notes = null_thread
    sig = notes.signal
    assert (sig.number, sig.name, sig.code_name, sig.address) == (signal.SIGSEGV, "SIGSEGV", "SEGV_MAPERR", 0)
    assert sig.sender_pid is None


def test_mappings_auxv_and_build_ids(null_thread):
    case, notes = null_thread
    paths = {m.path for m in notes.mappings}
    assert str(case.exe) in paths
    assert any(os.path.basename(p).startswith("libc.so") for p in paths)
    assert notes.mappings == sorted(notes.mappings, key=lambda m: m.start)
    assert notes.auxv["AT_EXECFN"] == case.argv[0]
    assert notes.auxv["AT_PAGESZ"] == os.sysconf("SC_PAGE_SIZE")
    assert isinstance(notes.auxv["AT_HWCAP"], int)
    assert notes.auxv["AT_PLATFORM"] == ARCH
    assert notes.build_ids[str(case.exe)] == elf_build_id(case.exe)
    for path, build_id in notes.build_ids.items():
        assert build_id == elf_build_id(path), path


def test_core_info_and_frame_zero_threads(null_thread):
    case, notes = null_thread
    info = to_core_info(notes)
    assert isinstance(info, model.CoreInfo)
    assert (info.pid, info.executable, info.arch, info.size) == (notes.pid, str(case.exe), ARCH, case.core.stat().st_size)
    assert info.signal.name == "SIGSEGV"
    threads = threads_from_notes(notes)
    assert [t.tid for t in threads] == [t.tid for t in notes.threads]
    crashed = [t for t in threads if t.crashed]
    assert len(crashed) == 1 and crashed[0].tid == notes.crashing_tid
    frame = crashed[0].frames[0]
    assert frame.index == 0 and frame.module == str(case.exe)
    assert frame.pc == crashed[0].registers[notes.pc_register]


# -- memory ----------------------------------------------------------------------------------


def test_memory_reads_are_exact_and_bounded(null_thread):
    case, notes = null_thread
    memory = notes.memory
    exe_first = min((m for m in notes.mappings if m.path == str(case.exe)), key=lambda m: m.start)
    assert memory.read(exe_first.start, 4) == b"\x7fELF"
    assert memory.read_u64(exe_first.start) == struct.unpack("<Q", memory.read(exe_first.start, 8))[0]
    # Text pages of a file mapping are not dumped (p_filesz 0): absent, not zeros.
    crashing_pc = notes.thread(notes.crashing_tid).registers[notes.pc_register]
    if memory.segment_containing(crashing_pc).filesz == 0:
        assert memory.read(crashing_pc, 1) is None
        assert memory.read_u64(crashing_pc) is None
    # Outside every segment, across the end of what a segment holds, and absurd sizes.
    assert memory.read(0, 8) is None
    assert memory.segment_containing(0x10) is None
    assert memory.read_cstring(0) is None
    edge = next(s for s in memory.segments if s.filesz and not memory.is_present(s.present_end))
    assert memory.read(edge.present_end - 4, 4) is not None
    assert memory.read(edge.present_end - 4, 8) is None
    assert len(memory.read_available(edge.present_end - 4, 8)) == 4
    assert memory.read(edge.start, MAX_READ + 1) is None
    assert memory.read(edge.start, -1) is None
    assert memory.read(edge.start, 0) == b""
    # Two adjacent dumped segments read as one range.
    for a, b in zip(memory.segments, memory.segments[1:]):
        if a.end == b.start and a.filesz == a.end - a.start and b.filesz:
            joined = memory.read(a.end - 8, 16)
            assert joined == memory.read(a.end - 8, 8) + memory.read(b.start, 8)
            break


def test_read_cstring_stops_at_the_nul_and_at_max_len(null_thread):
    case, notes = null_thread
    address = notes.auxv_pointers["AT_EXECFN"]
    argv0 = case.argv[0].encode()
    assert notes.memory.read_cstring(address) == argv0
    assert notes.memory.read_cstring(address, max_len=3) == argv0[:3]
    assert notes.memory.read(address, len(argv0) + 1) == argv0 + b"\0"


# -- signals ---------------------------------------------------------------------------------


def test_signal_sent_by_another_process(cores):
    case = cores.c_crash("killed")
    with read_core(case.core) as notes:
        sig = notes.signal
        assert (sig.number, sig.code_name) == (signal.SIGSEGV, "SI_USER")
        assert sig.sender_pid == os.getpid()
        assert sig.sender_uid == os.getuid()
        assert sig.address is None


def test_wild_write_address(cores):
    case = cores.c_crash("wild_write")
    with read_core(case.core) as notes:
        sig = notes.signal
        assert (sig.name, sig.code_name, sig.address) == ("SIGSEGV", "SEGV_MAPERR", 0x1EAD0000BEE8)


@pytest.mark.parametrize(
    "name, signame, code_name",
    [("divzero", "SIGFPE", "FPE_INTDIV"), ("ud2", "SIGILL", "ILL_ILLOPN")],
)
def test_faults_report_the_faulting_instruction(cores, name, signame, code_name):
    case = cores.c_crash(name)
    with read_core(case.core) as notes:
        assert (notes.signal.name, notes.signal.code_name) == (signame, code_name)
        pc = notes.thread(notes.crashing_tid).registers[notes.pc_register]
        # For SIGFPE and SIGILL si_addr is the instruction that trapped.
        assert notes.signal.address == pc
        assert notes.mapping_containing(pc).path == str(case.exe)
        assert notes.crashing_tid == notes.pid


def test_bus_error_address_is_in_the_truncated_file(cores):
    case = cores.c_crash("sigbus")
    with read_core(case.core) as notes:
        assert (notes.signal.name, notes.signal.code_name) == ("SIGBUS", "BUS_ADRERR")
        mapping = notes.mapping_containing(notes.signal.address)
        assert mapping is not None and mapping.path.endswith("sigbus.data")


def test_abort_is_a_signal_the_process_sent_itself(cores):
    case = cores.c_crash("assert_fail")
    with read_core(case.core) as notes:
        assert (notes.signal.name, notes.signal.code_name) == ("SIGABRT", "SI_TKILL")
        assert notes.signal.sender_pid == notes.pid
        assert notes.signal.address is None


# -- the real command line -------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_argv_case(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("long_argv")
    exe = compile_c(CRASHERS / "ud2.c", workdir / "ud2_args")
    args = ["two words", "it's quoted", "--model=" + "m" * 90, "", "last"]
    return run_to_core("long_argv", [str(exe), *args], workdir)


def test_argv_is_read_whole_from_the_stack(long_argv_case):
    case = long_argv_case
    with read_core(case.core) as notes:
        assert notes.argv == case.argv
        assert notes.cmdline == shlex.join(case.argv)
        assert len(notes.cmdline) > 80  # longer than prpsinfo can hold
        assert shlex.split(notes.cmdline) == case.argv
        assert notes.warnings == []


# -- bad input -------------------------------------------------------------------------------


def _bad(path, *fragments: str) -> str:
    with pytest.raises(BadInput) as info:
        read_core(path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    return message


def test_missing_directory_text_and_empty(tmp_path):
    _bad(tmp_path / "nope", "no such file")
    _bad(tmp_path, "is a directory")
    text = tmp_path / "notes.txt"
    text.write_text("this is not a core\n")
    _bad(text, "is not an ELF file")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    _bad(empty, "is empty")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _bad(fifo, "not a regular file")  # must not block on open
    zst = tmp_path / "core.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 100)
    _bad(zst, "zstd")


def test_elf_files_that_are_not_cores(tmp_path):
    _bad("/bin/ls", "is an ELF executable, not a core file")
    libm = next(p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6") if os.path.exists(p))
    _bad(libm, "shared library, not a core file")


def _patched_copy(core: Path, tmp_path: Path, offset: int, data: bytes, name: str) -> Path:
    copy = tmp_path / name
    shutil.copyfile(core, copy)
    with open(copy, "r+b") as f:
        f.seek(offset)
        f.write(data)
    return copy


def test_core_of_another_architecture(cores, tmp_path):
    case = cores.c_crash("divzero")
    ppc = _patched_copy(case.core, tmp_path, 18, struct.pack("<H", 21), "ppc64.core")  # EM_PPC64
    _bad(ppc, "core is for the ppc64 architecture", "x86_64 and aarch64")
    other = _patched_copy(case.core, tmp_path, 18, struct.pack("<H", 62 if ARCH == "aarch64" else 183), "other.core")
    # A supported architecture with the wrong note layout: read what fits and say what did not.
    with read_core(other) as notes, read_core(case.core) as original:
        assert notes.pid == original.pid
        assert notes.signal == original.signal
        assert all(t.registers == {} for t in notes.threads)
        assert any("too short for" in w for w in notes.warnings)
        assert all(t.frames == [] for t in threads_from_notes(notes))


def _note_and_load_offsets(core: Path) -> tuple[int, int, int, int]:
    from elftools.elf.elffile import ELFFile

    with open(core, "rb") as f:
        elf = ELFFile(f)
        note = next(s for s in elf.iter_segments() if s["p_type"] == "PT_NOTE")
        load = next(s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD" and s["p_filesz"])
        return note["p_offset"], note["p_filesz"], load["p_offset"], load["p_filesz"]


def test_truncated_cores_give_warnings_or_bad_input(cores, tmp_path):
    case = cores.c_crash("divzero")
    data = case.core.read_bytes()
    note_off, note_size, load_off, load_size = _note_and_load_offsets(case.core)
    cuts = [
        1, 40, 64, 100,  # header and program headers
        note_off + 8, note_off + 200, note_off + note_size // 2, note_off + note_size - 4,  # notes
        load_off + load_size // 2,  # inside the first PT_LOAD
        len(data) // 2, len(data) - 4096 * 3, len(data) - 1,  # later memory, the stack at the end
    ]
    outcomes = []
    for cut in cuts:
        truncated = tmp_path / f"core.cut{cut}"
        truncated.write_bytes(data[:cut])
        try:
            notes = read_core(truncated)
        except BadInput as exc:
            assert "\n" not in str(exc)
            outcomes.append("bad")
            continue
        with notes:
            assert any(f"core file is truncated: {cut} of" in w for w in notes.warnings), notes.warnings
            outcomes.append("read")
            if cut >= note_off + note_size:
                # Every note survived: identity and signal are intact.
                assert notes.signal.code_name == "FPE_INTDIV"
                assert notes.executable == str(case.exe)
                if case.pid is not None:
                    assert notes.pid == case.pid
                # Memory past the cut reads as absent.
                assert all(s.file_offset + s.filesz <= cut for s in notes.memory.segments if s.filesz)
    assert outcomes[:4] == ["bad"] * 4
    assert outcomes[-4:] == ["read"] * 4


def test_stack_lost_to_truncation_falls_back_to_psargs(cores, tmp_path):
    case = cores.c_crash("divzero")
    with read_core(case.core) as whole:
        stack = whole.memory.segment_containing(whole.thread(whole.crashing_tid).registers[whole.sp_register])
    truncated = tmp_path / "core.nostack"
    with open(case.core, "rb") as src:
        truncated.write_bytes(src.read(stack.file_offset))
    with read_core(truncated) as notes:
        # The kernel keeps PSARGS_LEN - 1 bytes of the arguments joined by spaces, unquoted.
        assert notes.cmdline == " ".join(case.argv)[: PSARGS_LEN - 1].rstrip()
        assert any("cut at 80 characters" in w for w in notes.warnings)


def test_hostile_note_sizes(cores, tmp_path):
    case = cores.c_crash("divzero")
    note_off, note_size, _, _ = _note_and_load_offsets(case.core)
    # The first note claims a 4 GiB descriptor.
    huge = _patched_copy(case.core, tmp_path, note_off + 4, struct.pack("<I", 0xFFFFFFFF), "huge.core")
    try:
        read_core(huge).close()
    except BadInput:
        pass
    # NT_FILE claims 2**60 mappings.
    data = case.core.read_bytes()
    offset = note_off
    for note in parse_notes(data[note_off:note_off + note_size]):
        header = 12 + ((len(note.name) + 1 + 3) & ~3)
        if note.type == 0x46494C45:
            lying = _patched_copy(case.core, tmp_path, offset + header, struct.pack("<Q", 1 << 60), "nt_file.core")
            with read_core(lying) as notes:
                assert notes.mappings == []
                assert any("NT_FILE" in w for w in notes.warnings)
                assert notes.signal.code_name == "FPE_INTDIV"
            break
        offset += header + ((len(note.desc) + 3) & ~3)
    else:
        pytest.fail("the core has no NT_FILE note")


def test_random_corruption_never_escapes_as_another_error(cores, tmp_path):
    case = cores.c_crash("divzero")
    data = bytearray(case.core.read_bytes())
    note_off, note_size, _, _ = _note_and_load_offsets(case.core)
    rng = random.Random(1234)
    target = tmp_path / "fuzzed.core"
    for _ in range(60):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            # Mostly the headers and notes, where the parser's decisions are made.
            position = rng.randrange(0, note_off + note_size) if rng.random() < 0.9 else rng.randrange(len(data))
            mutated[position] = rng.randrange(256)
        target.write_bytes(mutated)
        try:
            with read_core(target) as notes:
                module_table(notes)
        except BadInput:
            pass
