"""One exception hierarchy; each carries the exit code the CLI returns for it."""


class CoreAnalyzeError(Exception):
    """Base of every error the tool reports to the user as one line."""

    exit_code = 3


class BadInput(CoreAnalyzeError):
    """The user's input cannot be analyzed: missing file, not a core, wrong arch, usage."""

    exit_code = 2


class AnalysisFailed(CoreAnalyzeError):
    """The analysis broke part-way; a partial report may still be written."""

    exit_code = 3


class DebuggerError(AnalysisFailed):
    """The debugger is missing, died, hung, or answered a request with an error."""


class DebuggerTimeout(DebuggerError):
    """The debugger did not answer within the time allowed."""


class GdbError(DebuggerError):
    """gdb is missing, died, hung, or answered a command with an error."""


class GdbTimeout(GdbError, DebuggerTimeout):
    """gdb did not answer within the time allowed."""


class GdbNotFound(GdbError):
    """The gdb program is not installed (or --gdb names nothing runnable): a setup problem."""

    exit_code = 2


EXIT_OK = 0
EXIT_BAD_INPUT = BadInput.exit_code
EXIT_ANALYSIS_FAILED = AnalysisFailed.exit_code
