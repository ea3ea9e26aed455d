"""Windows' records of a crashed program: Event Viewer's Application Error (event 1000), Windows
Error Reporting's event (1001) and its "Problem signature" dialog.

    Faulting application name: python.exe, version: 3.10.6150.1013, time stamp: 0x62e84c21
    Faulting module name: _pywrap_tensorflow_internal.pyd, version: 0.0.0.0, time stamp: 0x5f1b2c3d
    Exception code: 0xc0000005
    Fault offset: 0x0000000006046edb
    Faulting process id: 0xE48
    Faulting module path: C:\\...\\site-packages\\tensorflow\\python\\_pywrap_tensorflow_internal.pyd

    Problem Event Name: BEX64            Event Name: APPCRASH
      Fault Module Name: ucrtbase.DLL    P4: python35.dll   (APPCRASH: P7 code, P8 offset;
      Exception Code: c0000409           P7: c0000005        BEX: P7 offset, P8 code)
      Exception Offset: 000884da         P8: 000c3397

The faulting module and the offset in it are a one-frame stack (the module's name is what the
classifier reads: TensorFlow's libraries by their names, CPython's DLL, a driver); the exception
code is the NTSTATUS the process died of, read as its POSIX signal (signals.NTSTATUS_SIGNALS) and,
where it says more (a stack overflow, a damaged heap), as the report's own class.
"""

from __future__ import annotations

import re

from coreanalyze.triage import device_rules, signals
from coreanalyze.triage import findings as fd

FORMAT = "windows-error-report"

# "Key: value" of either record; the key decides the field (case and spacing vary by version).
_FIELD = re.compile(
    r"^\s*(Faulting application name|Faulting module name|Exception code|Fault offset|Faulting process id|Faulting application path|"
    r"Faulting module path|Problem Event Name|Event Name|Application Name|Fault Module Name|Exception Offset|Exception Data|P\d{1,2})"
    r"\s*:\s*(.*?)\s*$",
    re.IGNORECASE,
)
# Keys that alone say the text is such a record (a "P4:" or "Application Name:" alone does not).
_ANCHORS = ("faulting application name", "faulting module name", "problem event name", "fault module name", "event name")
_NAME = re.compile(r"^([^,]{1,260})(?:,\s*version:\s*([\w.]{1,40}))?")
_CODE = re.compile(r"^(?:0x)?([0-9A-Fa-f]{8})$")
_HEX = re.compile(r"^(?:0x)?([0-9A-Fa-f]{1,16})$")
# Windows Error Reporting's event parameters: which P holds the module, the code and the offset.
_PARAMETERS = {"APPCRASH": ("P4", "P7", "P8"), "BEX": ("P4", "P8", "P7"), "BEX64": ("P4", "P8", "P7")}
_PARAMETER_KEY = re.compile(r"^p\d{1,2}$")
# A module WER could not name: the stack's hash ("StackHash_1dc2"), "unknown".
_UNNAMED = re.compile(r"^(?:StackHash_\w*|unknown)$", re.IGNORECASE)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    if not any(("ault" in line or "vent Name" in line) and ":" in line for line in lines):
        return []
    fields: dict[str, str] = {}
    first = None
    used: list[int] = []
    for i, line in enumerate(lines):
        if claimed[i] or ":" not in line:
            continue
        m = _FIELD.match(line)
        if m is None:
            continue
        key = m.group(1).lower()
        key = key.upper() if _PARAMETER_KEY.match(key) else key
        if first is None and key not in _ANCHORS:
            continue
        if first is None:
            first = i
        elif key in fields:
            break  # a second record (Event Viewer lists the same crash twice): the first one is read
        fields[key] = m.group(2)
        used.append(i)
    if first is None or not _is_record(fields):
        return []
    for i in used:
        claimed[i] = 1
    finding = fd.Finding(FORMAT, first)
    event = (fields.get("problem event name") or fields.get("event name") or "").strip()
    module, code, offset = _module_code_offset(fields, event)
    if code is not None:
        name = signals.from_ntstatus(code)
        finding.set_signal(name, fd.SIGNAL_NAMED)
        finding.detail = signals.ntstatus_detail(code) or f"{event or 'Application Error'}: exception code 0x{code:08x}"
    verdict = device_rules.default_rules().match("windows", event) if event else None
    if verdict is not None:
        device_rules.apply(finding, verdict, f"Problem Event Name: {event}")
    app = _NAME.match(fields.get("faulting application name") or fields.get("application name") or "")
    finding.executable = fields.get("faulting application path") or (app.group(1).strip() if app else None)
    pid = _HEX.match(fields.get("faulting process id", ""))
    finding.pid = int(pid.group(1), 16) if pid else None
    if module is not None:
        thread = fd.TextThread(crashed=True)
        thread.add(fd.native_frame(None, module=module, offset=offset))
        finding.add_thread(thread)
    if code is not None:
        where = f" in {module}" + (f" at offset 0x{offset:x}" if offset is not None else "") if module else ""
        finding.add_message(fd.MESSAGE_FROM_FRAME_ARGS, f"{event or 'Application Error'}: exception code 0x{code:08x}{where}")
    return [finding]


def _is_record(fields: dict[str, str]) -> bool:
    """An exception code, or a faulting module, with the record's own key beside it."""
    has_code = "exception code" in fields or "P7" in fields or "P8" in fields
    has_module = "faulting module name" in fields or "fault module name" in fields or "P4" in fields
    return has_code or (has_module and "faulting application name" in fields)


def _module_code_offset(fields: dict[str, str], event: str) -> tuple[str | None, int | None, int | None]:
    names = _PARAMETERS.get(event.upper())
    module = fields.get("faulting module path") or fields.get("faulting module name") or fields.get("fault module name")
    code = fields.get("exception code")
    offset = fields.get("fault offset") or fields.get("exception offset")
    if names is not None:
        module = module or fields.get(names[0])
        code = code or fields.get(names[1])
        offset = offset or fields.get(names[2])
    m = _NAME.match(module or "")
    module = m.group(1).strip().replace("\\", "/") if m else None
    if module is not None and _UNNAMED.match(module.rsplit("/", 1)[-1]):
        module = None
    c = _CODE.match(code or "")
    o = _HEX.match(offset or "")
    return module or None, int(c.group(1), 16) if c else None, int(o.group(1), 16) if o else None
