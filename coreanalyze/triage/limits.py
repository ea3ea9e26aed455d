"""Bounds on what is kept from pasted text: the text comes from anywhere and may be huge.

Every parser stops collecting at these limits and says so in a warning; nothing read from
the text can make a loop run longer than the number of lines it has.
"""

from __future__ import annotations

# Text beyond this many characters is not read at all (the crash is near the top or the
# bottom of any real paste; 64 MiB of text is already a log file, not a ticket).
MAX_TEXT_CHARS = 64 * 1024 * 1024
# A longer line is cut: C++ frames with long template names reach a few KiB, not more.
MAX_LINE_CHARS = 16 * 1024
# A gdb frame wrapped over several lines is joined back from at most this many lines.
MAX_CONTINUATION_LINES = 16
MAX_FRAMES_PER_THREAD = 512
MAX_THREADS = 512
# Recognized blocks of one format (e.g. many faulthandler dumps in one log).
MAX_BLOCKS_PER_FORMAT = 64
MAX_MESSAGE_CHARS = 2000
MAX_WARNINGS = 50
# Names handed to the demangler: longer ones are shown as they are.
MAX_DEMANGLE_CHARS = 4096
