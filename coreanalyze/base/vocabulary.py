"""The report's closed vocabularies, each as a StrEnum that knows its own properties.

Members are strings (they compare equal to, and serialize as, their values), so JSON and the
templates see the words of the JSON contract. The subsystem categories are not here: they are
rules data (classify/rules.toml), and a user's rules may add one.
"""

from __future__ import annotations

import enum

try:
    from enum import StrEnum
except ImportError:  # Python 3.10

    class StrEnum(str, enum.Enum):  # type: ignore[no-redef]
        def __str__(self) -> str:
            return str(self.value)


class ModuleStatus(StrEnum):
    """modules[].status: how the mapped object compares with the file used here."""

    OK = "ok"
    MISMATCH = "mismatch"
    MISSING = "missing"
    NO_BUILD_ID = "no-build-id"

    @property
    def unreliable(self) -> bool:
        """Frames in such a module are not named from the local file (it is not the crashed build)."""
        return self in (ModuleStatus.MISMATCH, ModuleStatus.MISSING)

    @property
    def trusted_image(self) -> bool:
        """The local file may stand for the crashed build (its symbols and code can be read)."""
        return self in (ModuleStatus.OK, ModuleStatus.NO_BUILD_ID)

    @property
    def problem(self) -> str | None:
        """Why its frames are unreliable, for people; None when they are not."""
        return {ModuleStatus.MISMATCH: "build-id differs from the local file", ModuleStatus.MISSING: "no local file"}.get(self)

    @property
    def rank(self) -> int:
        """Sort order in the module table: the worst first."""
        return (ModuleStatus.MISMATCH, ModuleStatus.MISSING, ModuleStatus.NO_BUILD_ID, ModuleStatus.OK).index(self)


def module_status(value: str) -> ModuleStatus | None:
    """A status from a report or a record (a plain string); None for a word it is not."""
    try:
        return ModuleStatus(value)
    except ValueError:
        return None


class FaultKind(StrEnum):
    """classification.fault_kind: what went wrong at the machine level."""

    NULL_DEREF = "null-deref"
    INVALID_ACCESS = "invalid-access"
    STACK_OVERFLOW = "stack-overflow"
    HEAP_CORRUPTION = "heap-corruption"
    CHECK_FAILURE = "check-failure"
    ABORT = "abort"
    UNCAUGHT_EXCEPTION = "uncaught-exception"  # std::terminate after a C++ throw
    ILLEGAL_INSTRUCTION = "illegal-instruction"
    DIVIDE_BY_ZERO = "divide-by-zero"
    BUS_ERROR = "bus-error"
    SENT_SIGNAL = "sent-signal"
    HANG = "hang"  # no crash: a snapshot of a process whose threads wait (classification.hang)
    # The GPU faulted (illegal address, device-side assert, ...) and the driver or the framework
    # ended the process (classification.gpu).
    GPU_EXCEPTION = "gpu-exception"
    # An allocation failed and the process ended because of it (classification.oom).
    OUT_OF_MEMORY = "out-of-memory"
    UNKNOWN = "unknown"


class Platform(StrEnum):
    """Where the process ran, as far as the advice is concerned: an operating system's process
    (files, mappings, ulimits, core dumps), or a microcontroller's firmware under an RTOS
    (ESP-IDF/FreeRTOS, Mbed OS, Zephyr), whose fault dumps the device parsers read."""

    HOSTED = "hosted"
    MICROCONTROLLER = "microcontroller"


class FrameKind(StrEnum):
    """threads[].frames[].kind."""

    NATIVE = "native"
    PYTHON = "python"


class Confidence(StrEnum):
    """classification.confidence."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class GpuCallRole(StrEnum):
    """What a host thread's CUDA / HIP / collective call does (gpu/host_calls.toml)."""

    SYNCHRONIZE = "synchronize"
    STREAM_WAIT = "stream-wait"
    EVENT_WAIT = "event-wait"
    MEMCPY = "memcpy"
    LAUNCH = "launch"
    MEMORY = "memory"
    COLLECTIVE = "collective"
    FRAMEWORK_WAIT = "framework-wait"
