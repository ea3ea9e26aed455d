"""The one-line messages a process prints just before it aborts, and the shell's verdict.

glibc's allocator and fortify checks, glibc assert(), the C++ runtime's uncaught-exception
report, and the line a shell or IDE prints when the child died by a signal. The messages
are rules as data: (pattern, weight); adding one is adding a row.
"""

from __future__ import annotations

import re

from coreanalyze.classify.rules import builtin_heap_messages, required_literal
from coreanalyze.triage import context, limits, signals
from coreanalyze.triage import findings as fd

FORMAT = "abort-message"
FORMAT_SHELL = "shell"

# The allocator's messages (rules data: [fault_kind] heap_messages) and glibc's other fatal
# checks; each ends in abort().
_HEAP_MESSAGES = builtin_heap_messages()
# A message may sit in a sentence that quotes it: "observed `double free or corruption (!prev)`".
_ALLOCATOR_MESSAGES = re.compile(
    r"(?:^|\s|:|[`'\"*_(])("
    r"(?:" + "|".join(_HEAP_MESSAGES) + r")[^\n]{0,200}"
    r"|Fatal glibc error: [^\n]{1,300}"
    r"|\*\*\* (?:stack smashing|buffer overflow|longjmp causes uninitialized stack frame) detected \*\*\*[^\n]{0,200}"
    r"|\*\*\* Error in `[^`]{1,300}': [^\n]{1,300}"
    r")"
)
# Text every line above contains: only lines with one of these meet the regex.
_ALLOCATOR_ANCHORS = (*dict.fromkeys(required_literal(p) for p in _HEAP_MESSAGES), "Fatal glibc error: ", " detected ***", "*** Error in `")
# Assertion macros other than glibc's: WebKit/Blink's ASSERT, BSD / macOS / MSVC assert(), V8's
# CSA_ASSERT ("abort: CSA_ASSERT failed: ...").
_ASSERTION = re.compile(r"^(?:ASSERTION FAILED: |Assertion failed: |abort: \w*ASSERT\w* failed: )\S")
# BSD / macOS assert() names its source as "file PATH, line N": given the `PATH:N` shape too, which
# is how the classifier reads a message's source file.
_BSD_ASSERT_SOURCE = re.compile(r", file (\S{1,400}?), line (\d{1,9})\.?$")
# A retyped report may read "throwing and instance": the message is kept in libstdc++'s words.
_TERMINATE = re.compile(r"terminate called (?:after throwing an?d? instance of '([^']{1,300})'|without an active exception|recursively)")
_WHAT = re.compile(r"[ \t]*what\(\):[ \t]+(.*)")
# What a shell / IDE / job runner prints when the child died by a signal.
# Markdown emphasis around it ("*Illegal instruction: 4*") and macOS's signal number after it
# ("Abort trap: 6", "Segmentation fault: 11") are part of the verdict.
_SHELL = re.compile(
    r"(?:^|\s|:|[*_`])(Segmentation fault|Aborted|Abort trap|Illegal instruction|illegal hardware instruction|Bus error|Floating point exception|Trace/breakpoint trap|Bad system call)"
    r"(?::? \d{1,2}\b)?(?: \(core dumped\)| \(core dumpl?ed\))?(?:\s|$|[*_`.])",
    re.IGNORECASE,
)
# zsh and fish name the signal in lower case after the job number and pid:
# "[1]    2964311 abort (core dumped)  python test.py", "zsh: abort      ipython".
_JOB_VERDICT = re.compile(
    r"(?:^|zsh: |fish: |\[?\d{1,3}\]\s+\d{1,9}\s+)(abort|segmentation fault|illegal hardware instruction|bus error|floating point exception)"
    r"(?:\s+\(core dumped\))?(?:\s|$)"
)
# A shell's verdict in the user's language ("中止 (コアダンプ)", "Speicherzugriffsfehler
# (Speicherabzug geschrieben)"): the whole line is the word, perhaps a job prefix and a remark.
_LOCALIZED = re.compile(
    r"^(?:\S{1,200}: line \d{1,9}:\s+\d{1,9}\s+|\[?\d{1,3}\]\s+\d{1,9}\s+|make(?:\[\d{1,3}\])?: \*\*\* \[[^\]]{1,200}\] )?"
    r"(" + "|".join(map(re.escape, signals.LOCALIZED_VERDICTS)) + r")"
    # Japanese glibc ends its sentences politely: "セグメンテーション違反です (コアダンプ)"; Czech
    # names the signal before the remark: "Neoprávněný přístup do paměti (SIGSEGV) (core dumped ...)".
    r"(?:です)?(?:\s*[(（][^)）]{0,60}[)）]){0,2}(?:\s{2,}\S.*)?$"
)
# bash's job report names the command after the verdict, however long it is:
# "script.sh: line 73: 90776 Illegal instruction: 4  python train.py --flags ...".
_BASH_JOB = re.compile(r"(?:^|: )line \d{1,9}:\s+\d{1,9}\s+(Segmentation fault|Aborted|Illegal instruction|Bus error|Floating point exception|Killed)\b")
# "Killed" names SIGKILL (most often the kernel's out-of-memory killer) only alone on its line, or
# where the shell's word lands at the end of a progress bar the process was redrawing (Keras'
# "... - ETA: 2:31 - loss: 2.2Killed", tqdm's "... 3.2it/s]Killed").
_KILLED = re.compile(r"^(?:zsh: |\[\d{1,3}\]\s+\d{1,9}\s+)?[Kk]illed(?:\s{2,}\S.*)?$")
_KILLED_AFTER_PROGRESS = re.compile(r"(?:\bETA: \d|\bloss: \d|\d(?:it/s|s/it|ms/step|s/step)\b|\|\s*\d+/\d+ \[).{0,300}?[\d\]%|]Killed$")
# Exit statuses: 128 + the signal from a shell ("exited with code 139", "non-zero exit status 134",
# docker's "Exited (134) 2 minutes ago"),
# minus the signal from Python's subprocess ("returncode -11"), systemd's "status=11/SEGV".
_LOCALIZED_MAX = 200
_EXIT_SIGNAL = re.compile(
    r"interrupted by signal (\d{1,2}): (SIG[A-Z]{2,8})|(?:killed|terminated|exited) (?:by|on|with) signal (\d{1,2}|SIG[A-Z]{2,8})"
    r"|(?:(?:exit(?:ed)?(?: with)?(?: exit)? (?:code|status)|non-zero exit status)[:=]?\s*|\b[Ee]xited ?\()(1[3-5]\d)\b"
    r"|\b(?:return ?code|exit(?:ed)?(?: with)? (?:code|status)|exitcode)[:=]?\s*-(\d{1,2})\b|<Signals\.(SIG[A-Z]{2,8}): \d{1,2}>"
    r"|\bstatus=\d{1,2}/(SEGV|ABRT|ILL|BUS|FPE|TRAP|SYS)\b"
)
# A signal a line names in words: "triggers SIGBUS (exit code 138)".
_NAMED_SIGNAL = re.compile(r"\b(SIG(?:SEGV|BUS|ILL|FPE|ABRT|TRAP|SYS|KILL))\b")
# Windows: "exit code -1073741819 (0xC0000005)", "exit code 0xC000001D", "exit status 3221225477".
_EXIT_NTSTATUS = re.compile(r"exit (?:code|status)\s*:?\s*(?:(-?\d{9,10})\b|\(?(0x[89ABCabc][0-9A-Fa-f]{7})\b)(?:\s*\((0x[0-9A-Fa-f]{8})\))?")
# Windows Error Reporting's record of a crashed program (Event Viewer, "Problem signature"):
# "Exception Code: c0000005" (without 0x) is the NTSTATUS the process died of.
_WER_CODE = re.compile(r"^\s*Exception Code:\s*(?:0x)?([0-9A-Fa-f]{8})\s*$")
# The command a user ran, when the process died right after it: an `import tensorflow` that
# ends in "Illegal instruction" is the wheel's CPU instructions meeting an older CPU.
_IMPORT_COMMAND = re.compile(r"\bimport (?:tensorflow|tflite_runtime|ai_edge_litert|tf_keras|keras)\b")
IMPORT_WINDOW = 6
# A Python command line ("$ python server.py", "python3 -m app"): a SIGILL right after it, before
# the program printed anything, is the same import-time death of a wheel built for newer CPUs.
_PYTHON_COMMAND = re.compile(r"^(?:\S{0,80}[$#%>]\s+)?(?:\S{0,200}/)?python[\d.]{0,5}(?:\s+-\S+)*\s+\S")
PYTHON_COMMAND_WINDOW = 1
PYTHON_COMMAND_MESSAGE = "illegal instruction right after the Python command"
# TensorFlow's own log lines (absl / TF logging, any severity) from its sources: when a shell's
# "Segmentation fault" follows them, the last one says what the process was doing.
_TF_LOG = re.compile(
    r"(?:^|\s)(?:[IWE]\d{4} \d\d:\d\d:[\d.]+\s+\d+ |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: [IWE] )"
    r"(?:external/\S+/)?(?:tensorflow(?:_core)?|tsl|xla|third_party/xla)/[\w./-]+\.(?:cc|h):\d+\] "
    # absl's own prefix names only the file (TF 2.15+, JAX): "I0000 00:00:17.1 123 cuda_dnn.cc:529] "
    r"|(?:^|\s)[IWE]\d{4} \d\d:\d\d:[\d.]+\s+\d+ [\w.-]+\.(?:cc|h):\d+\] "
    # TensorFlow's Python logger (estimator, TF 1.x training loops): "INFO:tensorflow:Calling model_fn."
    r"|^(?:INFO|WARNING|ERROR):tensorflow:"
)
LOG_WINDOW = 12
_SIGNAL_WORDS = (
    "Exception Code",
    "fault", "Abort", "abort", "Illegal", "illegal", "Bus error", "bus error", "Floating", "floating", "signal", "Signals.",
    "exit", "return", "status=", "illed", "trap", "system call",
)  # fmt: skip


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    messages = fd.Finding(FORMAT, 0)
    shell = fd.Finding(FORMAT_SHELL, 0, substantive=False)
    first_message = first_shell = None
    pending_terminate: str | None = None
    pending_line = -1
    import_line: tuple[int, str] | None = None
    python_line: tuple[int, str] | None = None
    tf_log: tuple[int, str] | None = None
    count = 0
    for i, line in enumerate(lines):
        if claimed[i] or not line:
            continue
        s = line.strip()
        if pending_terminate is not None:
            m = _WHAT.match(s)
            if m:
                messages.add_message(fd.MESSAGE_TERMINATE, f"{pending_terminate} (what(): {m.group(1).strip()})")
                claimed[i] = 1
                pending_terminate = None
                continue
            if i - pending_line > 3:
                messages.add_message(fd.MESSAGE_TERMINATE, pending_terminate)
                pending_terminate = None
        if count >= limits.MAX_BLOCKS_PER_FORMAT:
            continue
        hit = False
        if "terminate called" in s:
            m = _TERMINATE.search(s)
            if m:
                pending_terminate = f"terminate called after throwing an instance of '{m.group(1)}'" if m.group(1) else m.group(0)
                pending_line = i
                hit = True
        else:
            m = _ALLOCATOR_MESSAGES.search(s) if _maybe_allocator(s) else None
            if m:
                messages.add_message(fd.MESSAGE_ALLOCATOR, m.group(1).strip())
                hit = True
            elif "Assertion `" in s and "' failed" in s:
                # "python3: file.c:12: func: Assertion `x' failed." (glibc assert)
                messages.add_message(fd.MESSAGE_TERMINATE, s)
                hit = True
            elif _ASSERTION.match(s):
                source = _BSD_ASSERT_SOURCE.search(s)
                messages.add_message(fd.MESSAGE_TERMINATE, s[:500] + (f" ({source.group(1)}:{source.group(2)})" if source else ""))
                hit = True
        if hit:
            count += 1
            claimed[i] = 1
            if first_message is None:
                first_message = i
                messages.line = i
            continue
        if "import " in s and _IMPORT_COMMAND.search(s):
            import_line = (i, s)
        elif import_line is not None and context.is_command(s):
            import_line = None  # a later command ran: the import is not what died
        elif "python" in s and _PYTHON_COMMAND.match(s):
            python_line = (i, s)
        if ("] " in s or ":tensorflow:" in s) and _TF_LOG.search(s):
            tf_log = (i, s)
            continue
        if any(w in s for w in _SIGNAL_WORDS) or len(s) <= _LOCALIZED_MAX:
            name = _shell_signal(s) or _localized_signal(s)
            if name is not None:
                shell.set_signal(name, fd.SIGNAL_FROM_SHELL)
                shell.detail = shell.detail or _shell_detail(s)
                if first_shell is None:
                    first_shell = i
                    shell.line = i
                if name != "SIGABRT" and import_line is not None and i - import_line[0] <= IMPORT_WINDOW:
                    # The shell's verdict right after the import is the whole report: an
                    # illegal instruction or an access violation while the library loads.
                    shell.substantive = True
                    shell.add_message(fd.MESSAGE_FROM_FRAME_ARGS, import_line[1][:300])
                elif name == "SIGILL" and python_line is not None and i - python_line[0] <= PYTHON_COMMAND_WINDOW:
                    shell.substantive = True
                    shell.add_message(fd.MESSAGE_FROM_FRAME_ARGS, f"{PYTHON_COMMAND_MESSAGE} `{python_line[1][:300]}`")
                elif tf_log is not None and i - tf_log[0] <= LOG_WINDOW and not shell.substantive and name != "SIGABRT":
                    # (An abort has words of its own: the F-line or message before it.)
                    # A TensorFlow process that died right after logging this: the line is the
                    # only clue to the subsystem (the verdict says so with low confidence).
                    shell.substantive = True
                    shell.add_message(fd.MESSAGE_FROM_FRAME_ARGS, f"last TensorFlow log line before the crash: {tf_log[1][:300]}")
    if pending_terminate is not None:
        messages.add_message(fd.MESSAGE_TERMINATE, pending_terminate)
    found = []
    if messages.messages:
        messages.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
        found.append(messages)
    if shell.signal is not None:
        found.append(shell)
    return found


def _maybe_allocator(s: str) -> bool:
    return any(anchor in s for anchor in _ALLOCATOR_ANCHORS)


def _ntstatus(m: re.Match) -> int:
    code = m.group(3) or m.group(2)
    return int(code, 16) if code else int(m.group(1))


def _shell_detail(s: str) -> str | None:
    """What a Windows exit code says beyond its signal (a stack overflow, a damaged heap)."""
    m = _EXIT_NTSTATUS.search(s)
    return signals.ntstatus_detail(_ntstatus(m)) if m else None


def _shell_signal(s: str) -> str | None:
    m = _EXIT_NTSTATUS.search(s)
    if m:
        return signals.from_ntstatus(_ntstatus(m))
    m = _WER_CODE.match(s) if "Exception Code" in s else None
    if m:
        return signals.from_ntstatus(int(m.group(1), 16))
    m = _EXIT_SIGNAL.search(s)
    if m:
        if m.group(4) or m.group(5):
            # A status carries the signal's number, which is the platform's: 138 is SIGUSR1 on
            # Linux and SIGBUS on macOS. A signal the line names beside it is the one it means.
            named = {signals.normalize_name(n) for n in _NAMED_SIGNAL.findall(s)} - {None}
            if len(named) == 1:
                return named.pop()
        if m.group(4):
            return signals.normalize_name(str(int(m.group(4)) - 128))
        return signals.normalize_name(m.group(2) or m.group(3) or m.group(5) or m.group(6) or m.group(7))
    m = _BASH_JOB.search(s)
    if m:
        return signals.from_description(m.group(1))
    # Only a line that is the shell's verdict: short, and not part of a sentence; unless the
    # verdict says "(core dumped)", which nothing but a crash does.
    if len(s) > 200 and "core dumped)" not in s:
        return None
    m = _SHELL.search(s) or _JOB_VERDICT.search(s)
    if m:
        return signals.from_description(m.group(1))
    if _KILLED.match(s) or (s.endswith("Killed") and _KILLED_AFTER_PROGRESS.search(s)):
        return "SIGKILL"
    return None


def _localized_signal(s: str) -> str | None:
    m = _LOCALIZED.match(s) if len(s) <= _LOCALIZED_MAX else None
    return signals.LOCALIZED_VERDICTS[m.group(1)] if m else None
