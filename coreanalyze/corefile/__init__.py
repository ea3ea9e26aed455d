"""Read what a core file says about the dead process, without gdb.

The kernel (or gdb's generate-core-file) writes an ELF ET_CORE file: PT_NOTE segments carry
the process's identity (NT_PRPSINFO), one NT_PRSTATUS per thread with its registers (the
thread that took the signal comes first), the signal details (NT_SIGINFO), the auxiliary
vector (NT_AUXV) and the mapped files (NT_FILE); PT_LOAD segments carry the memory.

Everything in a core is untrusted input: sizes and counts are checked against the bytes that
are really there, every loop is bounded, and a damaged core yields what could be read plus
warnings. Only input that cannot be a usable core at all raises errors.BadInput.

One module per concern:

    tables      the format's constants, register layouts and limits (data)
    structures  CoreNotes, ThreadNotes, Mapping, RawNote; the raw note-stream parser
    filecheck   is this an ELF core of a supported architecture, sane, complete
    notes       what each note says (threads, signal, files, auxv, process identity)
    cmdline     argv and environment recovered from the initial stack
    buildids    build-ids of the mapped files, from the core's own memory
    reader      read_core() and the conversion into the report's model
    sigframe    the signal frame under a handler: the signal it took, the registers it interrupted
"""

from coreanalyze.corefile.buildids import build_id_from_memory
from coreanalyze.corefile.notes import signal_code_name
from coreanalyze.corefile.reader import read_core, threads_from_notes, to_core_info
from coreanalyze.corefile.structures import CoreNotes, Mapping, RawNote, ThreadNotes, parse_notes
from coreanalyze.corefile.tables import NT_GNU_BUILD_ID, PARSE_ERRORS

__all__ = [
    "NT_GNU_BUILD_ID",
    "PARSE_ERRORS",
    "CoreNotes",
    "Mapping",
    "RawNote",
    "ThreadNotes",
    "build_id_from_memory",
    "parse_notes",
    "read_core",
    "signal_code_name",
    "threads_from_notes",
    "to_core_info",
]
