"""The C++ runtime's report that a thread could not be created, read for the subsystem behind it.

    terminate called after throwing an instance of 'std::system_error'
      what():  Resource temporarily unavailable
    libc++abi: terminating due to uncaught exception of type std::__1::system_error: thread constructor failed: Resource temporarily unavailable

std::thread throws std::system_error with EAGAIN when the process may not have another thread
(the user's process limit, a container's pids limit) or no memory for its stack. The uncaught
exception itself is read by abort_messages.py; this adds what the text around it says: when it
shows that TensorFlow ran (an `import tensorflow`, a tf.Session, TensorFlow's libraries or
frames), the threads being started are its runtime's thread pools (rules data: device_faults.toml,
family "host"), as weak evidence that a frame overrides.
"""

from __future__ import annotations

import re

from coreanalyze.triage import device_rules
from coreanalyze.triage import findings as fd

FORMAT = "thread-create"

_NEEDLES = ("Resource temporarily unavailable",)
# The text shows a TensorFlow process: its import, its Python API, its libraries or frames.
_TENSORFLOW = re.compile(
    r"\b(?:import|from) tensorflow\b|\btf\.(?:Session|compat\.v1|keras|data|train|function|constant|Graph)\b"
    r"|[/\\](?:tensorflow|tensorflow_core)[/\\]|\blib(?:tensorflow\w*|pywrap_tensorflow\w*)|_pywrap_tensorflow|\btensorflow::"
)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    del claimed  # the exception's own lines stay for abort_messages.py
    if not any(n in line for line in lines for n in _NEEDLES):
        return []
    rules = device_rules.default_rules()
    for i, line in enumerate(lines):
        if _NEEDLES[0] not in line or (verdict := rules.match("host", line)) is None:
            continue
        finding = fd.Finding(FORMAT, i, substantive=False)  # it only supports the exception's report
        shown = any(_TENSORFLOW.search(other) for other in lines)
        device_rules.apply(finding, verdict, line, category=verdict.category if shown else None)
        return [finding] if finding.evidence else []
    return []
