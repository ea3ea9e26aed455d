"""Trim a real GPU core dump into a test fixture that holds no NVIDIA files.

A GPU core carries, besides its tables, the device's memory and the module images of every
module the process had loaded, the driver's own (its copy kernels) among them. The trimmed copy
keeps every table byte for byte and only the module images whose symbols are the test program's
own kernels; every other image and every memory section is zeroed in place, so offsets, links
and sizes stay as the driver wrote them.

    python tests/support/gputrim.py GPU.nvcudmp OUT.nvcudmp.gz KERNEL...

KERNEL: a function symbol of the program's own module (an image is kept when it defines one).
"""

from __future__ import annotations

import gzip
import io
import sys

from elftools.elf.elffile import ELFFile

IMAGE_PREFIXES = (".cudbg.elfimg", ".cudbg.relfimg")
MEMORY_PREFIXES = (".cudbg.global", ".cudbg.local", ".cudbg.shared", ".cudbg.param")


def _defines(image: bytes, kernels: set[str]) -> bool:
    symtab = ELFFile(io.BytesIO(image)).get_section_by_name(".symtab")
    return symtab is not None and any(s.name in kernels for s in symtab.iter_symbols())


def trim(source: str, kernels: set[str]) -> bytes:
    data = bytearray(open(source, "rb").read())
    elf = ELFFile(io.BytesIO(bytes(data)))
    for section in elf.iter_sections():
        name, start, size = section.name, section["sh_offset"], section["sh_size"]
        keep = not name.startswith(MEMORY_PREFIXES)
        if name.startswith(IMAGE_PREFIXES):
            keep = _defines(section.data(), kernels)
        if not keep:
            data[start : start + size] = bytes(size)
    return bytes(data)


if __name__ == "__main__":
    source, target, *names = sys.argv[1:]
    with gzip.open(target, "wb", compresslevel=9) as out:
        out.write(trim(source, set(names)))
