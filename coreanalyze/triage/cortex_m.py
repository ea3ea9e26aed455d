"""Fault dumps of Cortex-M microcontrollers (TFLite Micro on Mbed OS, Zephyr, MicroPython, bare
metal): the fault status registers and the fault handler's words.

    ++ MbedOS Fault Handler ++                  [00:00:00.000,000] <err> os: ***** MPU FAULT *****
    FaultType: HardFault                        <err> os:   Data Access Violation
    PC   : 3DA30000                             <err> os:   MMFAR Address: 0x20002878
    HFSR : 40000000                             <err> os: Faulting instruction address (r15/pc): 0x080029a1
    BFSR : 00000001                             <err> os: >>> ZEPHYR FATAL ERROR 2: Stack overflow on CPU 0
    Crash location = Foo::Bar [0x000141C8]      <err> os: Current thread: 0x20000520 (main)

    FATAL ERROR:                                HardFault!  CFSR = 0x00020000  HFSR = 0x40000000
                MemManage                       BFAR = 0xE000ED38  PC = 0x08001234

The bits set in CFSR (or in MMFSR, BFSR and UFSR printed apart, shifted down) and HFSR say what
faulted (rules data: device_faults.toml [[fault_bit]]); the handler's own words (family
"cortex-m") say it where no register is printed, and a verdict of a stack overflow says more than
the fault that found it. MMFAR / BFAR is the fault address when its VALID bit is set (Zephyr
prints it only then). The faulting PC (and the caller in LR) is a short stack. Mbed OS's
crash_log_parser.py output ("Crash Info:") is such a dump decoded: a sentence for each bit set,
the PC's and LR's functions, and the code addresses it found on the stack.
"""

from __future__ import annotations

import re

from coreanalyze.triage import device_rules
from coreanalyze.triage import findings as fd

FORMAT = "cortex-m-fault"

# What is in front of a handler's line: a quote, a serial terminal's timestamp, Zephyr's log
# prefix ("[00:00:00.000,000] <err> os: ", "E: "); and a terminal's line-end markers ("<\r><\n>").
_PREFIX = re.compile(
    r"^(?:>\s?)*(?:\[\d{4}-\d\d-\d\d [\d:.]{8,15}\]\s*)?(?:\[[\d:.,]{8,24}\]\s*)?(?:<(?:err|inf|wrn|dbg)>\s*[\w-]{1,32}:\s*|[EWID]:\s+)?"
)
_LINE_END_MARKERS = re.compile(r"<\\[rn]>")
_BANNER = re.compile(r"^\*{3,6}\s*([A-Z][A-Z ]{2,40}?)\s*\*{3,6}$|^(?:FaultType|Fault type|Fault)\s*:\s*(\w[\w ]{2,30})$")
_MBED = "MbedOS Fault Handler"
_FATAL_ERROR = re.compile(r"^FATAL ERROR:?\s*(\w{0,20})$")
_ZEPHYR_FATAL = re.compile(r">>> ZEPHYR FATAL ERROR (\d{1,3}): (.{1,80}?)(?: on CPU \d+)?$")
# "CFSR: 0x00020000", "HFSR = 40000000", "SCB->CFSR: ...", "BFSR : 00000001", "MMFAR Address: 0x...".
_REGISTER = re.compile(
    r"\b(?:SCB->)?(CFSR|HFSR|MMFSR|BFSR|UFSR|MMFAR|MMAR|BFAR|PC|LR|EIP)(?:\s*\[R1[45]\])?(?:\s+Address)?\s*[:=]\s*(?:0x)?([0-9A-Fa-f]{1,8})\b"
)
_FAULTING_PC = re.compile(r"Faulting instruction address \(r15/pc\):\s*(0x[0-9a-fA-F]{1,8})")
_CURRENT_THREAD = re.compile(r"^Current thread: (?:0x[0-9a-fA-F]{1,16} )?\((.{1,64})\)$")
# Mbed OS's crash_log_parser.py decodes a dump ("Crash Info:") into the PC's and LR's functions
# ("zero_div_test() (00006930 + 0xe/0x20)", "<unknown-symbol>"), a sentence per fault status bit
# (device_faults.toml's `phrase`) and the code addresses found on the stack ("[00009e99] : main").
_DECODED = re.compile(r"^(?:Parsed )?Crash Info:$")
_CRASH_LOCATION = re.compile(r"^Crash location = (.{1,400}?) \[(?:0x)?([0-9A-Fa-f]{8})\]")
_CALLER_LOCATION = re.compile(r"^Caller location = (.{1,400}?) \[(?:0x)?([0-9A-Fa-f]{8})\]")
_STACK_CODE = re.compile(r"^\[([0-9A-Fa-f]{8})\] : (.{1,400})$")
_DECODED_NAME = re.compile(r"^(.*?)(?: \([0-9a-fA-F]{8} \+ 0x[0-9a-fA-F]+/0x[0-9a-fA-F]+\))?$")
_FAULTING_ADDRESS = re.compile(r"Faulting address: (?:0x)?([0-9A-Fa-f]{1,8})\b")
# Shifts of the sub-registers printed apart (each is printed shifted down to bit 0).
_SUB_REGISTERS = {"MMFSR": (0, 0xFF), "BFSR": (8, 0xFF), "UFSR": (16, 0xFFFF)}
_MMARVALID, _BFARVALID = 1 << 7, 1 << 15
# How much a kind of evidence counts when several say different things (highest wins).
_WORD, _DETAIL, _BIT = 1, 2, 3
_PAGE_FAULT = "Page fault at address"
_ANCHORS = ("MbedOS", "FAULT", "Fault", "FATAL ERROR", "CFSR", "HFSR", _PAGE_FAULT, "Crash Info:")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    if not any(a in line for line in lines for a in _ANCHORS):
        return []
    rules = device_rules.default_rules()
    finding: fd.Finding | None = None
    said: list[tuple[int, device_rules.Verdict, str]] = []  # (weight, verdict, line)
    registers: dict[str, int] = {}
    decoded = {"CFSR": 0, "HFSR": 0}  # the bits a decoder's sentences say are set
    stack: list[tuple[int, str | None]] = []  # (pc, function) after the PC and the LR
    location: str | None = None
    thread_name: str | None = None
    expect_word = False
    for i, raw in enumerate(lines):
        if claimed[i] or not raw:
            continue
        s = _PREFIX.sub("", _LINE_END_MARKERS.sub("", raw).strip()).strip()
        if not s:
            continue
        word = None
        if expect_word:
            expect_word = False
            word = s if re.fullmatch(r"\w[\w ]{2,30}", s) else None
        m = _BANNER.match(s)
        if m is not None:
            word = (m.group(1) or m.group(2)).strip()
        m = _FATAL_ERROR.match(s)
        if m is not None:
            expect_word = not m.group(1)
            word = m.group(1) or None
            if expect_word:
                finding = finding or fd.Finding(FORMAT, i)
                claimed[i] = 1
                continue
        if word is not None and (v := rules.match("cortex-m", word)) is not None:
            finding = finding or fd.Finding(FORMAT, i)
            said.append((_WORD, v, s))
            finding.add_message(fd.MESSAGE_TERMINATE, s)
            claimed[i] = 1
            continue
        if _MBED in s or _DECODED.match(s):
            finding = finding or fd.Finding(FORMAT, i)
            claimed[i] = 1
            continue
        if finding is not None and _decoded_bit(rules, s, decoded, registers):
            claimed[i] = 1
            continue
        m = _ZEPHYR_FATAL.search(s)
        if m is not None:
            finding = finding or fd.Finding(FORMAT, i)
            v = rules.match("cortex-m", s)
            if v is not None:
                said.append((_BIT + 1 if v.fault_kind else _DETAIL, v, s))
            finding.add_message(fd.MESSAGE_TERMINATE, s)
            claimed[i] = 1
            continue
        # A handler's detail line counts inside its report; a page fault's line names its address.
        v = rules.match("cortex-m", s) if finding is not None or _PAGE_FAULT in s else None
        if v is not None:
            finding = finding or fd.Finding(FORMAT, i)
            said.append((_DETAIL, v, s))
            if "address" in v.pattern.groupindex and (a := v.pattern.search(s).group("address")):
                registers.setdefault("ADDRESS", int(a, 16))
            claimed[i] = 1
            continue
        found = _REGISTER.findall(s)
        if found and (finding is not None or any(name in ("CFSR", "HFSR") for name, _ in found)):
            finding = finding or fd.Finding(FORMAT, i)
            for name, value in found:
                registers.setdefault("MMFAR" if name == "MMAR" else name, int(value, 16))
            claimed[i] = 1
            continue
        if finding is None:
            continue
        if (m := _FAULTING_PC.search(s)) is not None:
            registers.setdefault("PC", int(m.group(1), 16))
            claimed[i] = 1
        elif (m := _CURRENT_THREAD.match(s)) is not None:
            thread_name = m.group(1)
            claimed[i] = 1
        elif (m := _CRASH_LOCATION.match(s)) is not None:
            location = _decoded_name(m.group(1))
            registers.setdefault("PC", int(m.group(2), 16))
            claimed[i] = 1
        elif (m := _CALLER_LOCATION.match(s)) is not None:
            registers.setdefault("LR", int(m.group(2), 16))
            stack.insert(0, (int(m.group(2), 16), _decoded_name(m.group(1))))
            claimed[i] = 1
        elif (m := _STACK_CODE.match(s)) is not None:
            stack.append((int(m.group(1), 16), _decoded_name(m.group(2))))
            claimed[i] = 1
    if finding is None:
        return []
    cfsr = _cfsr(registers)
    if decoded["CFSR"]:
        cfsr = (cfsr or 0) | decoded["CFSR"]
    hfsr = registers.get("HFSR", 0) | decoded["HFSR"] if "HFSR" in registers or decoded["HFSR"] else None
    for bit in rules.bits:
        value = cfsr if bit.register == "CFSR" else hfsr
        if value is not None and value >> bit.bit & 1 and (bit.signal or bit.fault_kind):
            said.append((_BIT, bit.as_verdict(), f"{bit.register}.{bit.name} set"))
    if said:
        weight, verdict, line = max(said, key=lambda t: (t[0], _bit_priority(rules, t[1])))
        device_rules.apply(finding, verdict, line, _address(verdict, rules, registers, cfsr), detail=f"{line.removesuffix(' set')} (Cortex-M)")
        for _, other, other_line in said:
            if other.fault_kind is not None and other is not verdict:
                device_rules.apply(finding, other, other_line)
    _add_thread(finding, registers, location, thread_name, stack)
    return [finding]


def _decoded_bit(rules: device_rules.DeviceRules, line: str, decoded: dict[str, int], registers: dict[str, int]) -> bool:
    """A decoder's sentence for a fault status bit: the bit is set; the address it names is the
    bit's address register's, valid (the decoder prints it only then)."""
    bit = next((b for b in rules.bits if b.phrase is not None and b.phrase.search(line)), None)
    if bit is None:
        return False
    decoded[bit.register] |= 1 << bit.bit
    m = _FAULTING_ADDRESS.search(line)
    if m is not None and bit.address is not None:
        registers.setdefault(bit.address, int(m.group(1), 16))
        decoded["CFSR"] |= _MMARVALID if bit.address == "MMFAR" else _BFARVALID
    return True


def _decoded_name(name: str) -> str | None:
    """A decoder's function name without its "(start + offset/size)"; None for no symbol."""
    name = _DECODED_NAME.match(name.strip()).group(1).strip()  # type: ignore[union-attr]
    return None if not name or name == "<unknown-symbol>" else name


def _cfsr(registers: dict[str, int]) -> int | None:
    """CFSR, printed whole or as its three parts (each shifted down to bit 0, or not)."""
    if "CFSR" in registers:
        return registers["CFSR"]
    parts = [(name, registers[name]) for name in _SUB_REGISTERS if name in registers]
    if not parts:
        return None
    value = 0
    for name, part in parts:
        shift, mask = _SUB_REGISTERS[name]
        value |= part << shift if part <= mask else part  # a handler that printed it in place
    return value


def _bit_priority(rules: device_rules.DeviceRules, verdict: device_rules.Verdict) -> int:
    return next((b.priority for b in rules.bits if b.as_verdict().name == verdict.name), 0)


def _address(verdict, rules, registers: dict[str, int], cfsr: int | None) -> int | None:
    """The fault address: the one the handler's line named, else MMFAR / BFAR for the bit that
    decided, when CFSR says it is valid (a handler that printed no CFSR prints them only then)."""
    if "ADDRESS" in registers:
        return registers["ADDRESS"]
    bit = next((b for b in rules.bits if b.as_verdict().name == verdict.name), None)
    register = bit.address if bit is not None else {"SIGSEGV": "MMFAR", "SIGBUS": "BFAR"}.get(verdict.signal or "")
    if register not in registers:
        return None
    valid = _MMARVALID if register == "MMFAR" else _BFARVALID
    if cfsr is None:
        return registers[register] if bit is None else None
    return registers[register] if cfsr & valid else None


def _add_thread(
    finding: fd.Finding, registers: dict[str, int], location: str | None, name: str | None, stack: list[tuple[int, str | None]] = ()
) -> None:  # fmt: skip
    pc = registers.get("PC", registers.get("EIP"))
    if pc is None and location is None:
        return
    thread = fd.TextThread(crashed=True, name=name)
    thread.add(fd.native_frame(location, pc=pc))
    lr = registers.get("LR")
    if stack:  # a decoder's: the LR's function, then the code addresses on the stack
        seen = {pc}
        for address, function in stack:
            if address not in seen:  # the stack holds the PC's and LR's values too
                seen.add(address)
                thread.add(fd.native_frame(function, pc=address))
    elif lr is not None and lr < 0xF0000000:  # not an EXC_RETURN value: the caller's return address
        thread.add(fd.native_frame(None, pc=lr))
    finding.add_thread(thread)
