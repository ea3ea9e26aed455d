"""What the analysis found by searching memory (abort messages, installed packages' names).

A search reads megabytes to find a few lines; a shrunk core keeps only the pages where
something was found, with the context the search reads around it. The search of the shrunk
core then sees the same findings: every kept run is a segment of its own there, and the
searches go segment by segment.
"""

from __future__ import annotations

from coreanalyze.corefile.memory import searching
from coreanalyze.corefile.tables import SP_REGISTER
from coreanalyze.process.process import Process
from coreanalyze.shrink.pages import PageSet

CONTEXT = 4096  # bytes kept on either side of a finding: the search looks back for a line's start


def keep_abort_messages(process: Process, kept: PageSet) -> None:
    """The messages the analysis's scan finds, searched as it searches (near the crash first,
    far only where nothing was near): a message kept from far memory would be a small mapping of
    its own in the shrunk core, which the scan reads before far memory, and could outrank the
    one the full core's report names."""
    from coreanalyze.classify.abortmsg import scan_abort_messages, searches_far_memory

    register = SP_REGISTER.get(process.arch)
    crashing = next((t for t in process.threads if t.tid == process.crashing_tid), None)
    sp = crashing.registers.get(register) if crashing and register else None
    for message in scan_abort_messages(process, sp, far=searches_far_memory(process.signal), far_unless_found_near=True):
        length = len(message.text.encode("utf-8", "replace"))
        kept.add(message.address - CONTEXT, length + 2 * CONTEXT, "abort messages")


@searching()  # what it reads is a search: it keeps only what it found
def keep_distribution_names(process: Process, kept: PageSet) -> None:
    """Every `name-version.dist-info` string in writable memory (the packages' versions)."""
    from coreanalyze.process.imported import DIST_INFO, LOOK_BEHIND, dist_info_at

    for _segment, at in dist_info_at(process):
        kept.add(at - LOOK_BEHIND, LOOK_BEHIND + len(DIST_INFO) + 1, "package names")
