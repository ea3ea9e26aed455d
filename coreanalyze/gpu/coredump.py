"""Read the GPU core dump (.nvcudmp) the CUDA driver writes on a GPU exception.

What is read: the devices (name, SM architecture), the lanes that faulted (their exception,
device, SM, warp, lane, thread index), the warp's error PC, the CTA's block index and grid, the
grid's kernel entry and launching host thread, and the kernel's name from the symbol table of
the module image the driver saved in the dump. The file is untrusted: every offset is checked
against the file, every loop is bounded, and a broken file is one BadInput line.

pyelftools reads the ELF header and the kernels' module images. The section header table is
read with struct in chunks: a GPU core holds a few sections per warp and per lane (hundreds of
thousands for a busy GPU), of which only the tables are kept.
"""

from __future__ import annotations

import io
import os
import re
import stat
import struct
from dataclasses import dataclass, field

from elftools.elf.elffile import ELFFile

from coreanalyze.base.demangle import demangle
from coreanalyze.base.errors import BadInput
from coreanalyze.base.safenames import without_controls
from coreanalyze.corefile.tables import PARSE_ERRORS
from coreanalyze.gpu.layout import Layout, decode_rows, load_layout

EM_CUDA = 190
ET_CORE = 4
SHT_STRTAB = 3
_SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr

MAX_SECTIONS = 16_000_000  # a full dump of eight large GPUs stays under this
HEADER_CHUNK = 65_536  # section headers read at a time
MAX_TABLE_BYTES = 256 << 20  # one table section
MAX_ROWS = 1 << 20  # rows read from one table
MAX_LANE_ROWS = 1 << 22  # lane rows read in all
MAX_TOTAL_ROWS = 1 << 23  # rows of every table read in all
MAX_FAULTS_KEPT = 256  # faulting lanes described (all are counted)
MAX_IMAGE_BYTES = 256 << 20  # one module image
MAX_IMAGES_SCANNED = 4096  # module images searched for a PC when the grid's module is not found
MAX_SYMBOLS = 1 << 20  # symbols read from the module images in all
MAX_NAME_CHARS = 4096
MAX_WARNINGS = 20
_LOCAL_FUNCTION = re.compile(r"^\$[^$]+\$(.+)$")


@dataclass(frozen=True)
class Section:
    index: int
    type: int
    offset: int
    size: int
    entry_size: int
    link: int
    info: int


@dataclass
class GpuDevice:
    index: int  # the row in the device table (cuda-gdb's "dev")
    name: str | None = None  # "NVIDIA H100 80GB HBM3"
    sm_arch: str | None = None  # "sm_90"
    sm_count: int | None = None


@dataclass
class GpuKernel:
    name: str | None = None  # demangled
    entry: int | None = None  # the kernel's first instruction (device code address)
    size: int | None = None
    grid_dim: tuple[int, int, int] | None = None
    block_dim: tuple[int, int, int] | None = None
    host_tid: int | None = None  # the host thread that launched the grid
    pc_function: str | None = None  # the function holding the PC, when not the kernel itself
    pc_function_offset: int | None = None


@dataclass
class LaneFault:
    exception: str
    exception_code: int
    device: int
    sm: int
    warp: int | None = None
    lane: int | None = None
    pc: int | None = None  # where the exception was raised (the warp's error PC), else the lane's PC
    lane_pc: int | None = None  # where the lane stopped
    grid: int | None = None
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None


@dataclass
class GpuCoreDump:
    path: str
    devices: list[GpuDevice] = field(default_factory=list)
    faults: list[LaneFault] = field(default_factory=list)  # the first MAX_FAULTS_KEPT, first first
    faulting_lanes: int = 0
    faulting_warps: int = 0
    kernel: GpuKernel | None = None  # the first fault's kernel
    driver_version: str | None = None  # "580.159"
    cuda_version: str | None = None  # "13.0"
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False  # parts of the file are missing: what was read is partial

    @property
    def first(self) -> LaneFault | None:
        return self.faults[0] if self.faults else None

    def device(self, index: int) -> GpuDevice | None:
        return next((d for d in self.devices if d.index == index), None)


def _clean(text: str) -> str:
    return without_controls(text, MAX_NAME_CHARS)


def is_gpu_core_header(head: bytes) -> bool:
    """An ELF core of the CUDA architecture (the first 20 bytes of a file)."""
    if len(head) < 20 or not head.startswith(b"\x7fELF") or head[4] != 2:
        return False
    order = "little" if head[5] == 1 else "big"
    return int.from_bytes(head[16:18], order) == ET_CORE and int.from_bytes(head[18:20], order) == EM_CUDA


def is_gpu_core(path: str | os.PathLike[str]) -> bool:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO or a device would block or never end
        with open(path, "rb") as f:
            return is_gpu_core_header(f.read(20))
    except OSError:
        return False


class _Reader:
    def __init__(self, handle, size: int, path: str, layout: Layout) -> None:
        self.handle = handle
        self.size = size
        self.path = path
        self.layout = layout
        self.warnings: list[str] = []
        self.sections: dict[int, Section] = {}  # the kept ones, by index
        self.strtab: Section | None = None
        self._truncated = 0
        self._rows_left = MAX_TOTAL_ROWS
        self._symbols_left = MAX_SYMBOLS

    # ------------------------------------------------------------------ the container

    def read_section_table(self, elf: ELFFile) -> None:
        shoff, count = elf["e_shoff"], elf.num_sections()
        if elf["e_shentsize"] != _SECTION_HEADER.size or not shoff or not count:
            raise BadInput(f"{self.path}: the GPU core has no section table (truncated or corrupt)")
        if count > MAX_SECTIONS:
            raise BadInput(f"{self.path}: the GPU core claims {count} sections, more than any GPU core holds")
        if shoff >= self.size:
            raise BadInput(
                f"{self.path}: the GPU core is truncated: {self.size} bytes, and its section table, at the end, "
                f"would start at byte {shoff} (the process may have exited before the driver finished writing it; "
                "CUDA_COREDUMP_SHOW_PROGRESS=1 makes the driver print the exception and the kernel on stderr)"
            )
        if shoff + count * _SECTION_HEADER.size > self.size:
            self._truncated += 1
            self.warnings.append("the GPU core is truncated: its section table runs past the end of the file")
            count = max(0, (self.size - shoff) // _SECTION_HEADER.size)
        wanted = set(self.layout.section_types.values())
        shstrndx = elf["e_shstrndx"]
        for start in range(0, count, HEADER_CHUNK):
            n = min(HEADER_CHUNK, count - start)
            self.handle.seek(shoff + start * _SECTION_HEADER.size)
            chunk = self.handle.read(n * _SECTION_HEADER.size)
            for i, header in enumerate(_SECTION_HEADER.iter_unpack(chunk[: len(chunk) // _SECTION_HEADER.size * _SECTION_HEADER.size])):
                _name, sh_type, _flags, _addr, offset, size, link, info, _align, entsize = header
                index = start + i
                if sh_type == SHT_STRTAB and index != shstrndx and self.strtab is None:
                    self.strtab = Section(index, sh_type, offset, size, entsize, link, info)
                elif sh_type in wanted:
                    self.sections[index] = Section(index, sh_type, offset, size, entsize, link, info)
        if not any(s.type == self.layout.section_types["device_table"] for s in self.sections.values()):
            raise BadInput(f"{self.path}: no device table in the GPU core (truncated, corrupt, or not a CUDA core dump)")

    def data(self, section: Section, limit: int = MAX_TABLE_BYTES) -> bytes:
        if section.size > limit:
            self.warnings.append(f"GPU core section {section.index} is {section.size} bytes; only {limit} are read")
        size = min(section.size, limit)
        if section.offset > self.size or section.offset + size > self.size:
            self._truncated += 1
            size = max(0, self.size - section.offset)
            if size <= 0:
                return b""
        self.handle.seek(section.offset)
        return self.handle.read(size)

    def rows(self, section: Section, table: str, limit: int = MAX_ROWS) -> list[dict[str, int]]:
        if self._rows_left <= 0:
            return []
        size = section.entry_size or self.layout.tables[table].fields[-1].end
        # Read no more bytes than the rows wanted need: a table may claim any size.
        wanted = Section(section.index, section.type, section.offset, min(section.size, limit * size), section.entry_size, section.link, section.info)
        rows = decode_rows(self.layout.tables[table], self.data(wanted), section.entry_size, min(limit, self._rows_left))
        self._rows_left -= len(rows)
        if self._rows_left <= 0:
            self.warnings.append(f"more than {MAX_TOTAL_ROWS} table rows in the GPU core; the rest were not read")
        return rows

    def row(self, section: Section, table: str, index: int) -> dict[str, int] | None:
        """One row of a table, read alone (a lane table names its warp's row by index)."""
        layout = self.layout.tables[table]
        size = section.entry_size or layout.fields[-1].end
        start = index * size
        if size < layout.min_size or start + size > section.size or section.offset + start + size > self.size:
            return None
        self.handle.seek(section.offset + start)
        return layout.decode(self.handle.read(size))

    def of_type(self, table: str) -> list[Section]:
        sh_type = self.layout.section_types[table]
        return [s for s in self.sections.values() if s.type == sh_type]

    def parent(self, section: Section, table: str) -> Section | None:
        found = self.sections.get(section.link)
        return found if found is not None and found.type == self.layout.section_types[table] else None

    def string(self, offset: int) -> str | None:
        if self.strtab is None or not 0 <= offset < self.strtab.size:
            return None
        self.handle.seek(self.strtab.offset + offset)
        raw = self.handle.read(min(MAX_NAME_CHARS, self.strtab.size - offset)).split(b"\0", 1)[0]
        return _clean(raw.decode("utf-8", errors="replace")) or None

    def truncation_warning(self) -> bool:
        """Whether anything ran past the end of the file (and says so once)."""
        if self._truncated and not self.warnings:
            self.warnings.append(f"the GPU core is truncated: {self._truncated} of its sections run past the end of the file")
        return self._truncated > 0

    # ------------------------------------------------------------------ the tables

    def devices(self) -> list[GpuDevice]:
        devices: list[GpuDevice] = []
        for section in self.of_type("device_table")[:1]:
            for index, row in enumerate(self.rows(section, "device_table", limit=1024)):
                devices.append(
                    GpuDevice(
                        index=index,
                        name=self.string(row["devName"]),
                        sm_arch=self.string(row["smType"]),
                        sm_count=row["numSMs"],
                    )
                )
        return devices

    def faults(self, dump: GpuCoreDump) -> None:
        """The faulting lanes, in (device, SM, CTA, warp, lane) order; SM-level exceptions for
        SMs none of whose lanes says why."""
        sm_rows = self._sm_rows()
        found: list[tuple[tuple[int, ...], LaneFault]] = []
        warps: set[tuple[int, int, int, int]] = set()
        faulting_sms: set[tuple[int, int]] = set()
        budget = MAX_LANE_ROWS
        for lanes in sorted(self.of_type("lane_table"), key=lambda s: s.index):
            if budget <= 0:
                self.warnings.append(f"more than {MAX_LANE_ROWS} lanes in the GPU core; the rest were not read")
                break
            place = self._place(lanes)
            if place is None:
                continue
            device, sm, cta_row, warp_row, warp, cta = place
            rows = self.rows(lanes, "lane_table", limit=min(budget, 1024))
            budget -= len(rows)
            valid = warp.get("validLanesMask", 0xFFFFFFFF)
            for lane_index, lane in enumerate(rows):
                code = lane["exception"]
                if not code or not (valid >> lane.get("ln", lane_index)) & 1:
                    continue  # no exception, or a lane the warp does not run
                dump.faulting_lanes += 1
                warps.add((device, sm, cta_row, warp_row))
                faulting_sms.add((device, sm))
                if len(found) >= MAX_FAULTS_KEPT:
                    continue
                sm_row = sm_rows.get((device, sm), {})
                fault = LaneFault(
                    exception=self.layout.exception_name(code),
                    exception_code=code,
                    device=device,
                    sm=sm_row.get("smId", sm),
                    warp=warp.get("warpId", warp_row),
                    lane=lane.get("ln", lane_index),
                    pc=_error_pc(warp) or _error_pc(sm_row) or lane["virtualPC"],
                    lane_pc=lane["virtualPC"],
                    grid=cta.get("gridId64"),
                    block=(cta["blockIdxX"], cta["blockIdxY"], cta["blockIdxZ"]) if "blockIdxX" in cta else None,
                    thread=(lane["threadIdxX"], lane["threadIdxY"], lane["threadIdxZ"]),
                )
                found.append(((device, sm, cta_row, warp_row, lane_index), fault))
        dump.faulting_warps = len(warps)
        for (device, sm), row in sorted(sm_rows.items()):
            code = row.get("exception")
            if code and (device, sm) not in faulting_sms and len(found) < MAX_FAULTS_KEPT:
                fault = LaneFault(self.layout.exception_name(code), code, device, row.get("smId", sm), pc=_error_pc(row))
                found.append(((device, sm, -1, -1, -1), fault))
        dump.faults = [fault for _, fault in sorted(found, key=lambda item: item[0])]

    def _sm_rows(self) -> dict[tuple[int, int], dict[str, int]]:
        rows: dict[tuple[int, int], dict[str, int]] = {}
        for section in self.of_type("sm_table"):
            for index, row in enumerate(self.rows(section, "sm_table", limit=1 << 16)):
                rows[(section.info, index)] = row
        return rows

    def _place(self, lanes: Section):
        """(device, SM row, CTA row, warp row, warp, CTA) of a lane table, through its parents."""
        warps = self.parent(lanes, "warp_table")
        ctas = self.parent(warps, "cta_table") if warps else None
        sms = self.parent(ctas, "sm_table") if ctas else None
        if warps is None or ctas is None or sms is None:
            return None
        warp = self.row(warps, "warp_table", lanes.info)
        cta = self.row(ctas, "cta_table", warps.info)
        if warp is None or cta is None:
            return None
        return sms.info, ctas.info, warps.info, lanes.info, warp, cta

    def grid(self, device: int, grid_id: int | None) -> dict[str, int] | None:
        if grid_id is None:
            return None
        for section in self.of_type("grid_table"):
            if section.info != device:
                continue
            for row in self.rows(section, "grid_table", limit=1 << 16):
                if row["gridId64"] == grid_id:
                    return row
        return None

    def meta(self, dump: GpuCoreDump) -> None:
        for section in self.of_type("meta_data")[:1]:
            rows = self.rows(section, "meta_data", limit=1)
            if rows and "driverVersionMajor" in rows[0]:
                row = rows[0]
                dump.driver_version = f"{row['driverVersionMajor']}.{row['driverVersionMinor']}"
                if row.get("cudaDriverVersionMajor"):
                    dump.cuda_version = f"{row['cudaDriverVersionMajor']}.{row.get('cudaDriverVersionMinor', 0)}"

    # ------------------------------------------------------------------ the kernel's name

    def kernel(self, fault: LaneFault) -> GpuKernel | None:
        grid = self.grid(fault.device, fault.grid)
        kernel = GpuKernel()
        if grid is not None:
            kernel.entry = grid["functionEntry"] or None
            kernel.grid_dim = (grid["gridDimX"], grid["gridDimY"], grid["gridDimZ"])
            kernel.block_dim = (grid["blockDimX"], grid["blockDimY"], grid["blockDimZ"])
            kernel.host_tid = grid["attrHostTid"] or None
        images = self._images_of_module(grid["moduleHandle"]) if grid is not None else []
        address = kernel.entry if kernel.entry is not None else fault.pc
        symbols = self._function_at(images, address, fault.pc)
        if symbols is None and len(images) < MAX_IMAGES_SCANNED:
            scan = [s for s in self.of_type("relocated_elf_image") if s not in images][:MAX_IMAGES_SCANNED]
            symbols = self._function_at(scan, address, fault.pc)
        if symbols is not None:
            (name, start, size), at_pc = symbols
            kernel.name, kernel.size = name, size
            kernel.entry = kernel.entry or start
            if at_pc is not None and at_pc[1] != start:
                kernel.pc_function = at_pc[0]
                kernel.pc_function_offset = fault.pc - at_pc[1] if fault.pc is not None else None
        return kernel if (kernel.name or grid is not None) else None

    def _images_of_module(self, handle: int) -> list[Section]:
        """The relocated images of the module-table rows that hold this module handle."""
        rows: set[tuple[int, int]] = set()
        for section in self.of_type("module_table"):
            for index, row in enumerate(self.rows(section, "module_table", limit=1 << 16)):
                if row["moduleHandle"] == handle:
                    rows.add((section.index, index))
        return [s for s in self.of_type("relocated_elf_image") if (s.link, s.info) in rows]

    def _function_at(self, images: list[Section], address: int | None, pc: int | None):
        """((name, start, size) of the function at `address`, (name, start) of the one holding
        pc or None) from the first image that has the former."""
        if address is None:
            return None
        for image in images:
            functions = self._functions(image)
            kernel = _containing(functions, address)
            if kernel is not None:
                holder = _containing(functions, pc) if pc is not None else None
                return kernel, (holder[0], holder[1]) if holder is not None else None
        return None

    def _functions(self, image: Section) -> list[tuple[str, int, int]]:
        data = self.data(image, MAX_IMAGE_BYTES)
        try:
            elf = ELFFile(io.BytesIO(data))
            symtab = elf.get_section_by_name(".symtab")
            if symtab is None or not hasattr(symtab, "iter_symbols"):
                return []
            functions = []
            for symbol in symtab.iter_symbols():
                self._symbols_left -= 1
                if self._symbols_left < 0:
                    break  # every image's symbols together are bounded, not one image's
                if symbol["st_info"]["type"] == "STT_FUNC" and symbol.name:
                    functions.append((_function_name(symbol.name), symbol["st_value"], symbol["st_size"]))
            return functions
        except PARSE_ERRORS:
            self.warnings.append(f"a kernel image in the GPU core (section {image.index}) could not be read")
            return []


def _function_name(symbol: str) -> str:
    """A device function's symbol, demangled; the compiler names a function it did not inline
    into a kernel `$kernel$mangled`."""
    local = _LOCAL_FUNCTION.match(symbol)
    name = local.group(1) if local else symbol
    return _clean(demangle(name, max_chars=MAX_NAME_CHARS) or name)


def _error_pc(row: dict[str, int]) -> int | None:
    return row.get("errorPC") if row.get("errorPCValid") else None


def _containing(functions: list[tuple[str, int, int]], address: int) -> tuple[str, int, int] | None:
    for name, start, size in functions:
        if start == address or start <= address < start + size:
            return name, start, size
    return None


def read_gpu_core(path: str | os.PathLike[str], layout: Layout | None = None) -> GpuCoreDump:
    """The GPU core's devices, faulting lanes and the first fault's kernel. BadInput when the
    file is not a GPU core or too broken to say anything."""
    path = os.fspath(path)
    layout = layout or load_layout()
    try:
        size = os.stat(path).st_size
        handle = open(path, "rb")
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        if not is_gpu_core_header(handle.read(20)):
            raise BadInput(f"{path} is not a GPU core dump (an ELF core of the CUDA architecture)")
        handle.seek(0)
        reader = _Reader(handle, size, path, layout)
        dump = GpuCoreDump(path=path)
        try:
            reader.read_section_table(ELFFile(handle))
            dump.devices = reader.devices()
            reader.faults(dump)
            reader.meta(dump)
            if dump.first is not None:
                dump.kernel = reader.kernel(dump.first)
        except PARSE_ERRORS as exc:
            raise BadInput(f"{path}: the GPU core is corrupt ({type(exc).__name__})") from None
        dump.truncated = reader.truncation_warning()
        dump.warnings = list(dict.fromkeys(reader.warnings))[:MAX_WARNINGS]  # each once, a few
    if not dump.faults:
        dump.warnings.append("no lane or SM in the GPU core records an exception")
    return dump
