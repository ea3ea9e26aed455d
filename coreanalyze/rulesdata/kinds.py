"""The shape of every kind of TOML file the tool reads: the shipped rules data and the files a user
gives (`--rules`, `--known`). Only keys and types are declared here; what a value means (a regex
that compiles, a category that exists, a number in range) is checked by the module that uses it.

SHIPPED names each shipped file's kind, so a test can check them all and a new file must be
declared before it can be loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coreanalyze.rulesdata.shapes import BOOL, FLOAT, INT, STR, AnyOf, ListOf, Pair, Table, Tables, map_of


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per kind
class FileKind:
    name: str
    noun: str  # what a message calls such a file: "rules file"
    shape: Table


PACKAGE = Path(__file__).resolve().parent.parent
# The one shipped file two modules read (the packages of a process, and --fetch).
DISTRIBUTIONS_FILE = PACKAGE / "distributions.toml"

STRINGS = ListOf(STR)
SOME_STRINGS = ListOf(STR, single=True)  # a string alone stands for a list of one
INTS = ListOf(INT)

# classify/rules.toml, and a user's --rules files (the same format; see docs/categories.md).
CLASSIFY_RULES = FileKind(
    "classification rules",
    "rules file",
    Table(
        {
            "category": Tables(Table({"name": STR, "description": STR}, required=("name",))),
            "settings": Table(
                {
                    "window": INT,
                    "distance_penalty": INT,
                    "noise_penalty": INT,
                    "signature_frames": INT,
                    "signature_templates": BOOL,
                    "custom_op_priority": INT,
                    "custom_op_category": STR,
                    "line_penalty": INT,
                    "line_reach": INT,
                }
            ),
            "fold": Tables(Table({"pattern": STR, "replace": STR}, required=("pattern",))),
            "modules": map_of(SOME_STRINGS),  # module class -> library patterns
            "skip": map_of(SOME_STRINGS),  # skip list -> frame patterns
            "custom_op": Table({"callers": STR, "known_namespaces": STR, "tensorflow_names": STR, "kernel_entry": STR}),
            "op": Tables(
                Table(
                    {"name": STR, "kind": STR, "function": STR, "exclude": STR, "label": STR, "abstract": STR},
                    required=("function",),
                )
            ),
            "fault_kind": Table(
                {
                    **dict.fromkeys(("heap_messages", "check_messages", "assert_messages", "illegal_instruction_messages"), SOME_STRINGS),
                    **dict.fromkeys(
                        ("terminate_frames", "assert_frames", "stack_protector_frames", "oom_exceptions", "std_library_files", "runtime_libraries"),
                        STR,
                    ),
                    **dict.fromkeys(("stack_overflow_slack", "recursion_min_frames", "recursion_min_repeats"), INT),
                }
            ),
            "throw_helper": Tables(Table({"function": STR, "exception": STR}, required=("function", "exception"))),
            "report_class": Tables(Table({"pattern": STR, "fault_kind": STR}, required=("pattern", "fault_kind"))),
            "cpu_feature": Tables(Table({"pattern": STR, "feature": STR, "trap": BOOL}, required=("pattern", "feature"))),
            "rule": Tables(
                Table(
                    {
                        "name": STR,
                        "category": STR,
                        "priority": INT,
                        "function": STR,
                        "module": STR,
                        "python_file": STR,
                        "source_file": STR,
                        "abort_message": STR,
                        "line": STR,
                        "window": INT,
                        "last_command": BOOL,
                        "anywhere": BOOL,
                        "yields_to": STRINGS,
                        "fault_kind": STR,
                        "description": STR,
                    },
                    required=("name", "category"),
                )
            ),
            "framework": Tables(
                Table({"name": STR, "package": STR, "module": STR, "function": STR, "python_file": STR}, required=("name",))
            ),
            "advice": Tables(
                Table(
                    {
                        "text": SOME_STRINGS,
                        "category": STR,
                        "fault_kind": STR,
                        "custom_op": BOOL,
                        "loaded": SOME_STRINGS,
                        "host_call": STR,
                        "signal_code": STR,
                        "unset": SOME_STRINGS,
                        "platform": STR,
                    },
                    required=("text",),
                )
            ),
            "thread_role": Tables(Table({"role": STR, "names": SOME_STRINGS, "frames": SOME_STRINGS}, required=("role",))),
            "launched_from": Table({"op_execution": SOME_STRINGS, "waiting": SOME_STRINGS}),
        }
    ),
)

# known/crashes.toml, and a fleet's own --known files.
KNOWN_CRASHES = FileKind(
    "known crashes",
    "known-crash file",
    Table(
        {
            "crash": Tables(
                Table(
                    {
                        "id": STR,
                        "title": STR,
                        "url": STR,
                        # package -> the release that fixed it, or the releases (one per release line)
                        "fixed_in": map_of(AnyOf((STR, STRINGS))),
                        "advice": STR,
                        "match": Table(
                            {
                                "signature": STR,
                                "abort_message": STR,
                                "summary": STR,
                                "gpu_exception": STR,
                                "frames": SOME_STRINGS,
                                "fault_kind": SOME_STRINGS,
                                "ops": SOME_STRINGS,
                                "before_fix": BOOL,
                            }
                        ),
                    },
                    required=("id", "title", "match"),
                )
            ),
            # A generated file's record of where its entries came from (known/tfsagen.py).
            "provenance": Table(
                {
                    "source": STR,
                    "commit": STR,
                    "path": STR,
                    "inputs_sha256": STR,
                    "op_registry": STR,
                    "read": STRINGS,
                    "without_entry": STRINGS,
                }
            ),
        }
    ),
)

GPU_ERRORS = FileKind(
    "GPU error texts",
    "rules file",
    Table(
        {
            "error": Tables(
                Table({"exception": STR, "fault_kind": STR, "patterns": STRINGS, "label": STR}, required=("exception", "fault_kind", "patterns"))
            ),
            "oom": Tables(Table({"allocator": STR, "pattern": STR}, required=("allocator", "pattern"))),
            "xid": Tables(Table({"number": INT, "meaning": STR, "cause": STR}, required=("number", "meaning", "cause"))),
            "dtype_sizes": map_of(INT),
        },
        required=("error", "oom", "xid", "dtype_sizes"),
    ),
)

DISTRIBUTIONS = FileKind(
    "distributions",
    "rules file",
    Table(
        {
            "import_names": map_of(STRINGS),  # import name -> distributions, most likely first
            "prefer_when_loaded": Tables(Table({"library": STR, "distributions": STRINGS}, required=("library", "distributions"))),
            "accelerators": map_of(STRINGS),
            "namespaces": map_of(Table({"distributions": STRINGS, "components": map_of(STR)}, required=("distributions",))),
        },
        required=("import_names",),
    ),
)

RERAISE = FileKind(
    "re-raising handlers",
    "rules file",
    Table(
        {
            "reraise_functions": STRINGS,
            "handler": Tables(Table({"name": STR, "functions": STRINGS, "same_signal": BOOL, "tail_call_in": STR}, required=("name",))),
        },
        required=("reraise_functions",),
    ),
)

# opinstance/layouts/*.toml: byte offsets measured from the framework's headers.
OFFSETS = map_of(AnyOf((INT, STR, BOOL)))
OP_LAYOUT = FileKind(
    "op-instance layout",
    "layout file",
    Table(
        {
            "framework": STR,
            "versions": STRINGS,
            "layout": map_of(AnyOf((INT, OFFSETS))),
            "types": map_of(Pair((STR, INT))),  # TFLite type number -> [name, element size]
            "allocation_types": map_of(STR),
            "delegates": map_of(STR),
        },
        required=("framework", "layout"),
    ),
)
DTYPES = FileKind(
    "TensorFlow dtypes",
    "layout file",
    map_of(Table({"name": STR, "size": INT, "struct": STR}, required=("name", "size"))),
)
TFLITE_OPS = FileKind("TFLite builtin ops", "layout file", Table({"builtin_ops": map_of(STR)}, required=("builtin_ops",)))

GPU_HOST_CALLS = FileKind(
    "GPU host calls",
    "rules file",
    Table(
        {
            "settings": Table({"window": INT, "version_suffix": STR}),
            "libraries": Table({"exports_only": STR}),
            "call": Tables(Table({"function": STR, "role": STR, "waits": BOOL}, required=("function", "role", "waits"))),
        }
    ),
)
GPU_COREDUMP_LAYOUT = FileKind(
    "GPU core dump layout",
    "layout file",
    Table(
        {
            "section_types": map_of(INT),
            "tables": map_of(Table({"fields": ListOf(Pair((STR, STR))), "required": INT}, required=("fields",))),
            "exceptions": map_of(STR),
        },
        required=("section_types", "tables", "exceptions"),
    ),
)
GPU_EXCEPTIONS = FileKind(
    "GPU exceptions",
    "rules file",
    Table(
        {
            "default_category": STR,
            "driver_modules": STR,
            "kernel": Tables(Table({"category": STR, "pattern": STR, "description": STR}, required=("category", "pattern"))),
            "advice": Tables(Table({"exceptions": STRINGS, "text": STR}, required=("exceptions", "text"))),
            "missing": Table({"enabled": STR, "unreadable": STR, "disabled": STR}, required=("enabled", "unreadable", "disabled")),
        },
        required=("default_category", "driver_modules", "missing"),
    ),
)

HANG_ROLE = Table({"role": STR, "state": STRINGS, "frames": STRINGS, "holds_gil": BOOL, "main": BOOL})
HANG_RULES = FileKind(
    "hang rules",
    "rules file",
    Table(
        {
            "snapshot": Table(
                {"stop_signals": STRINGS, "watchdog_signals": STRINGS, "faulting_frames": STRINGS, "reraise_frames": STR},
                required=("stop_signals", "watchdog_signals", "faulting_frames"),
            ),
            "threads": Table({"window": INT}, required=("window",)),
            "syscalls": map_of(
                Table(
                    {
                        "register": STR,
                        "argument": STR,
                        **dict.fromkeys(("futex", "io", "sleep", "join", "signal"), INTS),
                        "names": map_of(STR),  # system call number -> name
                    },
                    required=("register", "argument"),
                )
            ),
            "wait": Tables(Table({"state": STR, "function": STR, "object_kind": STR, "object": STR}, required=("state", "function"))),
            "primitives": Table({"function": STRINGS}, required=("function",)),
            "tensorflow": Tables(
                Table(
                    {
                        "name": STR,
                        "category": STR,
                        "summary": STR,
                        "evidence": STR,
                        "advice": STRINGS,
                        "roles": Tables(HANG_ROLE),
                        "max_threads": INT,
                        "idle": Table({"threads": STR, "state": STRINGS}),
                    },
                    required=("name", "category", "summary"),
                )
            ),
            "advice": map_of(STRINGS),  # kind of hang -> advice lines
        },
        required=("snapshot", "threads", "syscalls", "wait", "primitives"),
    ),
)

TRIAGE_EVIDENCE = FileKind(
    "evidence rules",
    "rules file",
    Table(
        {
            "settings": Table({"strong": FLOAT}),
            # name, pattern and needles are required; the loader says so with the rule's name.
            "evidence": Tables(
                Table(
                    {
                        "name": STR,
                        "pattern": STR,
                        "needles": STRINGS,
                        "signal": STR,
                        "category": STR,
                        "fault_kind": STR,
                        "confidence": FLOAT,
                        "states_error": BOOL,
                        "last_resort": BOOL,
                        "description": STR,
                    }
                )
            ),
        }
    ),
)

# triage/device_faults.toml: what device and OS fault handlers write, as signals and fault kinds.
TRIAGE_DEVICE_FAULTS = FileKind(
    "device fault rules",
    "rules file",
    Table(
        {
            "verdict": Tables(
                Table(
                    {"name": STR, "family": STR, "pattern": STR, "signal": STR, "code": STR, "fault_kind": STR, "category": STR, "address": STR,
                     "description": STR},
                    required=("name", "family", "pattern"),
                )
            ),
            "fault_bit": Tables(
                Table(
                    {"register": STR, "bit": INT, "name": STR, "signal": STR, "code": STR, "fault_kind": STR, "address": STR, "priority": INT, "description": STR,
                     "phrase": STR},
                    required=("register", "bit", "name"),
                )
            ),
            "family": Tables(Table({"name": STR, "platform": STR, "description": STR}, required=("name", "platform"))),
        }
    ),
)

JOB_RULES = FileKind(
    "job rules",
    "rules file",
    Table(
        {
            "collective": Tables(Table({"name": STR, "python": STR, "file": STR, "native": STR, "fallback": BOOL, "with": STR, "serving": BOOL},
                                       required=("name",))),
            "peer_failure": Table({"patterns": STRINGS}),
            "failed_task": Tables(Table({"pattern": STR, "says": STR, "leader": BOOL}, required=("pattern", "says"))),
            "peer_in_memory": Table({"needles": STRINGS}),
            "logged_wait": Tables(Table({"pattern": STR, "function": STR, "file": STR}, required=("pattern", "function", "file"))),
        }
    ),
)

WATCH_CONTAINERS = FileKind(
    "container runtimes",
    "rules file",
    Table({"container": Tables(Table({"runtime": STR, "cgroup": STR}, required=("runtime", "cgroup")))}, required=("container",)),
)

# classify/beyond.toml: where the op of a crash outside the op's own frames is looked for.
BEYOND_RULES = FileKind(
    "op-beyond-frames rules",
    "rules file",
    Table(
        {
            "scan": Table({"dead_bytes": INT, "outermost_bytes": INT, "live_bytes": INT},
                          required=("dead_bytes", "outermost_bytes", "live_bytes")),
            "catcher": Tables(Table({"function": STR, "label": STR, "interpreter": BOOL}, required=("function", "label"))),
            "throw": Table({"throw_function": STR, "machinery": STR, "machinery_modules": STR},
                           required=("throw_function", "machinery", "machinery_modules")),
            "jit_runtime": Tables(Table({"function": STR, "label": STR, "category": STR}, required=("function", "label", "category"))),
            # op kind -> category; "generic": the categories an op found beyond the frames replaces
            "op_category": map_of(AnyOf((STR, STRINGS))),
        },
        required=("scan", "throw", "op_category"),
    ),
)

# Every shipped TOML file (relative to the package) and its kind; "*" as in a glob.
SHIPPED: dict[str, FileKind] = {
    "classify/rules.toml": CLASSIFY_RULES,
    "classify/gpu_errors.toml": GPU_ERRORS,
    "classify/beyond.toml": BEYOND_RULES,
    "known/crashes.toml": KNOWN_CRASHES,
    "known/tfsa.toml": KNOWN_CRASHES,
    "distributions.toml": DISTRIBUTIONS,
    "classify/reraise.toml": RERAISE,
    "opinstance/layouts/*.toml": OP_LAYOUT,
    "opinstance/dtypes.toml": DTYPES,
    "opinstance/tflite_ops.toml": TFLITE_OPS,
    "gpu/host_calls.toml": GPU_HOST_CALLS,
    "gpu/coredump_layout.toml": GPU_COREDUMP_LAYOUT,
    "gpu/exception.toml": GPU_EXCEPTIONS,
    "hang/rules.toml": HANG_RULES,
    "triage/evidence.toml": TRIAGE_EVIDENCE,
    "triage/device_faults.toml": TRIAGE_DEVICE_FAULTS,
    "jobs/rules.toml": JOB_RULES,
    "watch/containers.toml": WATCH_CONTAINERS,
}
