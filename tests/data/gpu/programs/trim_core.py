"""Zero the bytes of a core's segments that belong to NVIDIA's or site-packages' files (their
relocated data), keeping the layout; stacks, heap and anonymous memory stay."""
import re
import struct
import sys

KEEP_FILES = re.compile(r"^/(usr/)?(lib|lib64|bin)/")  # the OS: interpreter, libc, libstdc++ ...
VENDOR = re.compile(r"cuda|nvidia|nvrtc|cublas|cudnn|nccl|cufft|curand|cusparse|cusolver|nvjitlink", re.I)

def stack_pointers(f, phs):
    sps = []
    for p_type, _fl, off, vaddr, _pa, filesz, _memsz, _al in phs:
        if p_type != 4:
            continue
        f.seek(off)
        note = f.read(filesz)
        pos = 0
        while pos + 12 <= len(note):
            namesz, descsz, ntype = struct.unpack_from("<III", note, pos)
            pos += 12 + ((namesz + 3) & ~3)
            desc = note[pos:pos + descsz]
            pos += (descsz + 3) & ~3
            if ntype == 1 and len(desc) >= 112 + 27 * 8:  # NT_PRSTATUS: rsp is user_regs[19]
                sps.append(struct.unpack_from("<Q", desc, 112 + 19 * 8)[0])
    return sps


def main(path):
    with open(path, "r+b") as f:
        data = f.read(64)
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        f.seek(phoff)
        phs = [struct.unpack("<IIQQQQQQ", f.read(phentsize)[:56]) for _ in range(phnum)]
        files = []
        for p_type, _fl, off, vaddr, _pa, filesz, _memsz, _al in phs:
            if p_type != 4:
                continue
            f.seek(off)
            note = f.read(filesz)
            pos = 0
            while pos + 12 <= len(note):
                namesz, descsz, ntype = struct.unpack_from("<III", note, pos)
                pos += 12
                pos += (namesz + 3) & ~3
                desc = note[pos:pos + descsz]
                pos += (descsz + 3) & ~3
                if ntype == 0x46494c45:  # NT_FILE
                    count, _page = struct.unpack_from("<QQ", desc, 0)
                    ranges = [struct.unpack_from("<QQQ", desc, 16 + 24 * i) for i in range(count)]
                    names = desc[16 + 24 * count:].split(b"\0")
                    for (start, end, _o), name in zip(ranges, names):
                        files.append((start, end, name.decode("utf-8", "replace")))
        sps = stack_pointers(f, phs)
        zeroed = 0
        listing = []
        for p_type, _fl, off, vaddr, _pa, filesz, _memsz, _al in phs:
            if p_type != 1 or filesz == 0:
                continue
            owner = next((n for s, e, n in files if s <= vaddr < e), None)
            has_sp = any(vaddr <= sp < vaddr + filesz for sp in sps)
            listing.append((filesz, hex(vaddr), owner or "anon", has_sp))
            if owner is None:
                # Anonymous memory: keep stacks and everything of ordinary size (the Python heap,
                # arenas); drop huge driver/pool allocations.
                if has_sp or filesz < (48 << 20):
                    continue
            elif KEEP_FILES.match(owner) and not VENDOR.search(owner):
                continue
            f.seek(off)
            remaining = filesz
            while remaining:
                chunk = min(remaining, 1 << 24)
                f.write(b"\0" * chunk)
                remaining -= chunk
            zeroed += filesz
        for row in sorted(listing, reverse=True)[:10]:
            print("   ", row[0] >> 20, "MiB", *row[1:])
        print(f"{path}: zeroed {zeroed >> 20} MiB of {len(files)} mapped-file ranges' segments")

main(sys.argv[1])
