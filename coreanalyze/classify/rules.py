"""The classifier's rules: loaded from rules.toml and the skip_*.txt lists, checked, merged.

A user's `--rules FILE` has the shape of rules.toml. Anything wrong with it (bad TOML, an
unknown category, a regex that does not compile, a field of the wrong type) is reported as
errors.BadInput with one line naming the file and the entry, never as a traceback.
"""

from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from coreanalyze import rulesdata
from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import FAULT_KINDS
from coreanalyze.base.vocabulary import GpuCallRole, Platform
from coreanalyze.classify.lazyregex import LazyPattern
from coreanalyze.rulesdata.kinds import CLASSIFY_RULES

HERE = Path(__file__).resolve().parent
BUILTIN_RULES = HERE / "rules.toml"

# Roles of the skip lists, each from its own plain-text file (Socorro-style).
SKIP_ROLES = ("trampoline", "abort", "logging", "libc", "runtime", "allocator", "checked")
# Roles that are pure noise for the culprit; "allocator" frames are skipped too but kept as
# evidence. The order is the fallback order: when every frame is skipped, the culprit is the
# first frame outside the earlier (more certainly irrelevant) roles.
NOISE_ROLES = ("trampoline", "abort", "logging", "libc", "runtime")

# A rules file bigger than this is not a rules file.
MAX_RULES_FILE = 2 * 1024 * 1024
MAX_PATTERN = 4000

MODULE_CLASSES = ("tensorflow", "python", "system", "extension")
MAX_MODULE_CLASSES_KEPT = 50_000  # module_class's answers kept per rule set


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    priority: int
    function: re.Pattern[str] | None = None
    module: re.Pattern[str] | None = None
    python_file: re.Pattern[str] | None = None
    # Searched in the source path of a native frame that has no function name (stacks that
    # name only file:line); such a frame has nothing else a rule could read.
    source_file: re.Pattern[str] | None = None
    abort_message: re.Pattern[str] | None = None
    description: str = ""
    origin: str = "built-in"
    fault_kind: str | None = None  # applies only to crashes of this fault kind
    # Searched in each line of a pasted crash text (log lines, the command or Python statement
    # that ran, the libraries it names); `window`: only lines at most this far from the crash's
    # own line count. A line rule stands alone, like an abort-message rule.
    line: re.Pattern[str] | None = None
    window: int | None = None
    # With line: only lines no later command ran after (the import that was the last thing run).
    last_command: bool = False
    # With line: when nothing in the crash's reach names a subsystem, a line anywhere in the text
    # (its title, the script above the log, the log's first lines) that matches still says which
    # subsystem ran; window and last_command no longer apply there.
    anywhere: bool = False
    # With abort_message: where no frame decided, a line of the text naming one of these
    # subsystems claims the crash (the message says what was detected, the line what did it).
    yields_to: tuple[str, ...] = ()

    @property
    def frame_rule(self) -> bool:
        return any(p is not None for p in (self.function, self.module, self.python_file, self.source_file))

    @property
    def native_rule(self) -> bool:
        return self.function is not None or self.module is not None

    def matches_native(self, function: str, module_base: str, fault_kind: str | None = None, file: str = "") -> bool:
        if self.source_file is not None:
            return not function and bool(file) and self.source_file.search(file) is not None and self.applies_to(fault_kind)
        if self.python_file is not None or not self.native_rule or not self.applies_to(fault_kind):
            return False
        if self.function is not None and not (function and self.function.search(function)):
            return False
        if self.module is not None and not (module_base and self.module.search(module_base)):
            return False
        return True

    def applies_to(self, fault_kind: str | None) -> bool:
        return self.fault_kind is None or self.fault_kind == fault_kind

    def matches_python(self, function: str, file: str, fault_kind: str | None = None) -> bool:
        if "\\" in file:
            file = file.replace("\\", "/")  # a Windows path: the rules are written with "/"
        if self.python_file is None or not file or not self.python_file.search(file) or not self.applies_to(fault_kind):
            return False
        return self.function is None or bool(function and self.function.search(function))

    def matches_message(self, message: str | None, fault_kind: str | None = None) -> bool:
        return bool(self.abort_message is not None and message and self.abort_message.search(message) and self.applies_to(fault_kind))

    def nearest_line(self, context: Sequence[tuple[int, str, bool]], fault_kind: str | None = None, *, anywhere: bool = False) -> tuple[int, str] | None:
        """The (distance, line) of the context line nearest the crash that this rule matches;
        context: (distance from the crash's line, line, whether a later command ran after it).
        anywhere: the whole text's lines, read by an `anywhere` rule without its window."""
        if self.line is None or not self.applies_to(fault_kind) or (anywhere and not self.anywhere):
            return None
        best = None
        for distance, text, superseded in context:
            if superseded and self.last_command and not anywhere:
                continue
            if (anywhere or self.window is None or distance <= self.window) and (best is None or distance < best[0]) and self.line.search(text):
                best = (distance, text)
        return best


@dataclass(frozen=True)
class OpPattern:
    name: str
    kind: str  # kernel | dataset | tflite-builtin | tflite-custom | tflite-delegate | custom
    function: re.Pattern[str]
    exclude: re.Pattern[str] | None = None
    label: str | None = None
    # An op class this matches that is an abstract base (FFTBase): the kernel that ran is the
    # derived class whose method sits right above it on the stack (FFTCPU<false, true, 1>).
    abstract: re.Pattern[str] | None = None

    def op_of(self, function: str) -> str | None:
        m = self.function.search(function)
        if not m:
            return None
        if self.label:
            return self.label
        op = m.groupdict().get("op") or m.group(0)
        if self.exclude is not None and self.exclude.search(op):
            return None
        return op


@dataclass(frozen=True)
class AdviceEntry:
    lines: tuple[str, ...]
    category: str | None = None
    fault_kind: str | None = None
    custom_op: bool | None = None
    origin: str = "built-in"
    loaded: tuple[str, ...] = ()  # only for a process that loaded one of these [[framework]]s
    host_call: str | None = None  # only when the crashing thread is in a GPU call of this role
    signal_code: str | None = None  # only for this si_code ("SEGV_MAPERR")
    unset: tuple[str, ...] = ()  # only when the process's environment sets none of these variables
    # Only where the process ran so (vocabulary.Platform); no weight in the order: a platform's
    # line takes the place of the line it stands in for.
    platform: str | None = None

    @property
    def specificity(self) -> int:
        return (
            (2 if self.fault_kind else 0) + (1 if self.category else 0) + (4 if self.custom_op else 0)
            + (4 if self.host_call else 0) + (2 if self.signal_code else 0)
        )


@dataclass(frozen=True)
class Framework:
    """A framework or GPU runtime a process may have loaded: by its distribution's name, a
    library it maps, or (for a pasted backtrace) its frames' functions and Python files."""

    name: str
    package: re.Pattern[str] | None = None
    module: re.Pattern[str] | None = None
    function: re.Pattern[str] | None = None
    python_file: re.Pattern[str] | None = None


@dataclass(frozen=True)
class CpuFeature:
    pattern: re.Pattern[str]
    feature: str
    trap: bool = False


@dataclass(frozen=True)
class ThrowHelper:
    function: re.Pattern[str]
    exception: str


@dataclass(frozen=True)
class ReportClass:
    """A crash report's own verdict (a sanitizer's class, an exception) -> fault kind."""

    pattern: re.Pattern[str]
    fault_kind: str


@dataclass(frozen=True)
class ThreadRole:
    """A thread gets `role` when its name matches one of `names` or one of its native frames'
    function names contains one of `frames` (demangled or mangled spelling)."""

    role: str
    names: tuple[re.Pattern[str], ...] = ()
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    window: int = 12
    distance_penalty: int = 5
    noise_penalty: int = 30
    signature_frames: int = 5
    signature_templates: bool = False
    custom_op_priority: int = 85
    custom_op_category: str = "kernel-compute"
    # A line rule loses this much per line between its line and the crash's (at most line_reach lines).
    line_penalty: int = 1
    line_reach: int = 20


@dataclass(frozen=True)
class FaultKindData:
    heap_messages: tuple[re.Pattern[str], ...] = ()
    check_messages: tuple[re.Pattern[str], ...] = ()
    assert_messages: tuple[re.Pattern[str], ...] = ()
    illegal_instruction_messages: tuple[re.Pattern[str], ...] = ()
    terminate_frames: re.Pattern[str] | None = None
    assert_frames: re.Pattern[str] | None = None
    stack_protector_frames: re.Pattern[str] | None = None
    # Exceptions that mean an allocation failed: uncaught, they end the process out of memory.
    oom_exceptions: re.Pattern[str] | None = None
    # Source files of the C++ standard library: a frame there is the library's, never the culprit.
    std_library_files: re.Pattern[str] | None = None
    runtime_libraries: re.Pattern[str] | None = None
    stack_overflow_slack: int = 65536
    recursion_min_frames: int = 1000
    recursion_min_repeats: int = 50


@dataclass
class RuleSet:
    rules: list[Rule] = field(default_factory=list)
    skip: dict[str, list[re.Pattern[str]]] = field(default_factory=lambda: {r: [] for r in SKIP_ROLES})
    folds: list[tuple[re.Pattern[str], str]] = field(default_factory=list)
    modules: dict[str, list[re.Pattern[str]]] = field(default_factory=lambda: {c: [] for c in MODULE_CLASSES})
    custom_op_callers: re.Pattern[str] | None = None
    custom_op_known_namespaces: re.Pattern[str] | None = None
    custom_op_tensorflow_names: re.Pattern[str] | None = None
    custom_op_kernel_entry: re.Pattern[str] | None = None
    ops: list[OpPattern] = field(default_factory=list)
    fault: FaultKindData = field(default_factory=FaultKindData)
    throw_helpers: list[ThrowHelper] = field(default_factory=list)
    report_classes: list[ReportClass] = field(default_factory=list)
    # classification.category vocabulary: the built-in [[category]] list plus the user's.
    categories: list[str] = field(default_factory=list)
    thread_roles: list[ThreadRole] = field(default_factory=list)  # first match wins
    # Substrings of native frames that make a Python thread the launcher of a crash elsewhere.
    op_execution_markers: tuple[str, ...] = ()
    wait_markers: tuple[str, ...] = ()
    cpu_features: list[CpuFeature] = field(default_factory=list)
    advice: list[AdviceEntry] = field(default_factory=list)
    frameworks: list[Framework] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)
    sources: list[str] = field(default_factory=list)
    _skip_cache: dict[str, re.Pattern[str]] | None = field(default=None, repr=False, compare=False)
    _priority_cache: tuple[list[Rule], int, list[Rule]] | None = field(default=None, repr=False, compare=False)
    _module_classes: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # module_class's answers

    # -- queries used by the classifier ----------------------------------------------------

    def fold(self, name: str) -> str:
        for pattern, replacement in self.folds:
            name = pattern.sub(replacement, name)
        return name

    def skip_role(self, name: str) -> str | None:
        """The skip list a normalized name is on ('abort', 'allocator', ...), if any."""
        if not name:
            return None
        combined = self.combined_skip()
        for role in SKIP_ROLES:
            pattern = combined.get(role)
            if pattern is not None and pattern.match(name):
                return role
        return None

    def matched_one_by_one(self) -> list[Any]:
        """What holds the patterns that are matched one at a time: all but the skip lists,
        whose patterns are matched through combined_skip's alternations."""
        return [getattr(self, f.name) for f in fields(self) if f.name != "skip" and not f.name.startswith("_")]  # _: caches

    def combined_skip(self) -> dict[str, re.Pattern[str]]:
        """One alternation per skip list, built once: a deep recursion has thousands of frames."""
        if self._skip_cache is None:
            self._skip_cache = {
                role: re.compile("|".join(f"(?:{p.pattern})" for p in self.skip[role])) for role in SKIP_ROLES if self.skip[role]
            }
        return self._skip_cache

    def module_class(self, path: str | None) -> str | None:
        """tensorflow | python | system | extension | foreign; None when the path is unknown.
        Kept per path: a report asks it of each of ~150 libraries several times, and a batch's
        cores share theirs."""
        if not path:
            return None
        known = self._module_classes.get(path)
        if known is None:
            known = next((cls for cls in MODULE_CLASSES if any(p.search(path) for p in self.modules[cls])), "foreign")
            if len(self._module_classes) >= MAX_MODULE_CLASSES_KEPT:
                self._module_classes.clear()
            self._module_classes[path] = known
        return known

    def best_native_rule(self, function: str, module_base: str, fault_kind: str | None = None, file: str = "") -> Rule | None:
        """The matching rule of the highest priority (of those, the first listed)."""
        return next((r for r in self._by_priority() if r.matches_native(function, module_base, fault_kind, file)), None)

    def best_python_rule(self, function: str, file: str, fault_kind: str | None = None) -> Rule | None:
        """As best_native_rule, for a Python frame."""
        return next((r for r in self._by_priority() if r.matches_python(function, file, fault_kind)), None)

    def _by_priority(self) -> list[Rule]:
        """The rules, highest priority first, in their order within a priority: the first that
        matches is the best, and the many frames of a report stop at it. Sorted again when the
        list changed (a user's rules file adds to it)."""
        cached = self._priority_cache
        if cached is None or cached[0] is not self.rules or cached[1] != len(self.rules):
            cached = (self.rules, len(self.rules), sorted(self.rules, key=lambda r: -r.priority))
            self._priority_cache = cached
        return cached[2]

    def message_rules(self, message: str | None, fault_kind: str | None = None) -> list[Rule]:
        return [r for r in self.rules if r.matches_message(message, fault_kind)]

    def line_rules(self, context: Sequence[tuple[int, str, bool]], fault_kind: str | None = None, *, anywhere: bool = False) -> list[tuple[Rule, int, str]]:
        """(rule, distance, line) for every line rule that matches a line of the text's context
        (anywhere: of the whole text, for the rules marked `anywhere`)."""
        out = []
        for rule in self.rules:
            hit = rule.nearest_line(context, fault_kind, anywhere=anywhere) if rule.line is not None else None
            if hit is not None:
                out.append((rule, *hit))
        return out


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


class _Problem(Exception):
    """A defect in one rules file; turned into BadInput naming the file."""


# The built-in rules' patterns are compiled when first used (see lazyregex); set while they load.
_built_in = contextvars.ContextVar("built_in_rules", default=False)


def _compile(value: Any, where: str) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise _Problem(f"{where}: expected a non-empty regex string")
    if len(value) > MAX_PATTERN:
        raise _Problem(f"{where}: regex longer than {MAX_PATTERN} characters")
    if _built_in.get():
        return LazyPattern(value)  # type: ignore[return-value]
    try:
        return re.compile(value)
    except re.error as e:
        raise _Problem(f"{where}: bad regex {value!r}: {e}") from None


def _optional_regex(table: dict[str, Any], key: str, where: str) -> re.Pattern[str] | None:
    return _compile(table[key], f"{where}: {key}") if key in table else None


def _int_field(table: dict[str, Any], key: str, where: str, default: int, lo: int, hi: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _Problem(f"{where}: {key} must be an integer from {lo} to {hi}")
    return value


def _str_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Problem(f"{where}: expected a list of strings")
    return value


def _tables(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _Problem(f"[[{key}]] must be an array of tables")
    return value


_KNOWN_TOP_LEVEL = {"category", "thread_role", "launched_from", "settings", "fold", "modules", "custom_op", "op", "fault_kind", "throw_helper", "report_class", "cpu_feature", "rule", "advice", "skip", "framework"}
_CATEGORY_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_RULE_FIELDS = {"name", "category", "priority", "function", "module", "python_file", "source_file", "abort_message", "description", "fault_kind", "line", "window", "last_command", "anywhere", "yields_to"}


# A rule's abort_message may name a list of the [fault_kind] table instead of repeating it.
HEAP_MESSAGES_REFERENCE = "{heap_messages}"


def _expand_lists(t: dict[str, Any], key: str) -> dict[str, Any]:
    value = t.get(key)
    if not isinstance(value, str) or HEAP_MESSAGES_REFERENCE not in value:
        return t
    return {**t, key: value.replace(HEAP_MESSAGES_REFERENCE, "(?:" + "|".join(builtin_heap_messages()) + ")")}


@lru_cache(maxsize=1)
def builtin_heap_messages() -> tuple[str, ...]:
    """The allocator's "the heap is damaged" messages of rules.toml ([fault_kind]
    heap_messages): the one list that the memory scanner, the text triage, the fault kind and
    the allocator rule all read."""
    data = rulesdata.shipped(BUILTIN_RULES, CLASSIFY_RULES)
    return tuple(data["fault_kind"]["heap_messages"])


def required_literal(pattern: str) -> str:
    """The longest run of literal text every match of `pattern` contains (outside groups, not
    optional): a substring search finds the few candidate lines before the regex runs."""
    runs, run, depth, i, n = [], "", 0, 0, len(pattern)
    while i < n:
        c, literal = pattern[i], None
        if c == "\\" and i + 1 < n:
            literal = pattern[i + 1] if not pattern[i + 1].isalnum() else None
            i += 2
        elif c == "[":
            close = pattern.find("]", i + 2)
            i = close + 1 if close > 0 else n
        elif c in "()":
            depth += 1 if c == "(" else -1
            i += 1
        elif c in ".^$|?*+{}":
            i += 1
        else:
            literal, i = c, i + 1
        quantifier = pattern[i] if i < n and pattern[i] in "?*+{" else ""
        if depth == 0 and literal is not None and quantifier not in ("?", "*", "{"):
            run += literal
            if not quantifier:
                continue
        runs.append(run)
        run = ""
    runs.append(run)
    return max(runs, key=len)


def _parse_rule(t: dict[str, Any], i: int, origin: str, categories: Sequence[str]) -> Rule:
    name = t.get("name")
    where = f"rule #{i + 1}" + (f" {name!r}" if isinstance(name, str) else "")
    if not isinstance(name, str) or not name.strip():
        raise _Problem(f"{where}: missing name")
    unknown = set(t) - _RULE_FIELDS
    if unknown:
        raise _Problem(f"{where}: unknown field(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(_RULE_FIELDS))})")
    category = t.get("category")
    if category not in categories:
        raise _Problem(f"{where}: unknown category {category!r} (one of: {', '.join(categories)})")
    rule = Rule(
        name=name.strip(),
        category=category,
        priority=_int_field(t, "priority", where, 50, 0, 100),
        function=_optional_regex(t, "function", where),
        module=_optional_regex(t, "module", where),
        python_file=_optional_regex(t, "python_file", where),
        source_file=_optional_regex(t, "source_file", where),
        abort_message=_optional_regex(_expand_lists(t, "abort_message"), "abort_message", where),
        description=str(t.get("description", "")),
        origin=origin,
        fault_kind=_optional_fault_kind(t, where),
        line=_optional_regex(t, "line", where),
        window=_int_field(t, "window", where, 0, 0, 10000) if "window" in t else None,
        last_command=_bool_field(t, "last_command", where),
        anywhere=_bool_field(t, "anywhere", where),
        yields_to=tuple(_str_list(t["yields_to"], f"{where}: yields_to")) if "yields_to" in t else (),
    )
    if not rule.frame_rule and rule.abort_message is None and rule.line is None:
        raise _Problem(f"{where}: needs at least one of function, module, python_file, source_file, abort_message, line")
    if rule.anywhere and rule.line is None:
        raise _Problem(f"{where}: anywhere is for line rules")
    if rule.yields_to and rule.abort_message is None:
        raise _Problem(f"{where}: yields_to is for abort_message rules")
    for c in rule.yields_to:
        if c not in categories:
            raise _Problem(f"{where}: yields_to: unknown category {c!r}")
    if rule.line is not None and (rule.frame_rule or rule.abort_message is not None):
        raise _Problem(f"{where}: line stands alone (it reads the text around the crash, not a frame or the message)")
    if rule.python_file is not None and rule.module is not None:
        raise _Problem(f"{where}: python_file and module cannot be combined (Python frames have no library)")
    if rule.source_file is not None and (rule.function is not None or rule.module is not None or rule.python_file is not None):
        raise _Problem(f"{where}: source_file stands alone (it reads frames that have nothing else)")
    return rule


def _bool_field(t: dict[str, Any], key: str, where: str) -> bool:
    value = t.get(key, False)
    if not isinstance(value, bool):
        raise _Problem(f"{where}: {key} must be true or false")
    return value


def _optional_fault_kind(t: dict[str, Any], where: str) -> str | None:
    kind = t.get("fault_kind")
    if kind is not None and kind not in FAULT_KINDS:
        raise _Problem(f"{where}: unknown fault_kind {kind!r} (one of: {', '.join(FAULT_KINDS)})")
    return kind


def _parse_advice(t: dict[str, Any], i: int, origin: str, categories: Sequence[str], frameworks: Sequence[str]) -> AdviceEntry:
    where = f"advice #{i + 1}"
    category = t.get("category")
    if category is not None and category not in categories:
        raise _Problem(f"{where}: unknown category {category!r} (one of: {', '.join(categories)})")
    kind = _optional_fault_kind(t, where)
    custom_op = t.get("custom_op")
    if custom_op is not None and not isinstance(custom_op, bool):
        raise _Problem(f"{where}: custom_op must be true or false")
    lines = tuple(_str_list(t.get("text"), f"{where}: text"))
    if not lines:
        raise _Problem(f"{where}: text is empty")
    loaded = tuple(_str_list(t.get("loaded", []), f"{where}: loaded"))
    unknown = [name for name in loaded if name not in frameworks]
    if unknown:
        raise _Problem(f"{where}: loaded: unknown framework(s) {', '.join(unknown)} (one of: {', '.join(frameworks)})")
    host_call = t.get("host_call")
    if host_call is not None and host_call not in tuple(GpuCallRole):
        raise _Problem(f"{where}: unknown host_call {host_call!r} (one of: {', '.join(GpuCallRole)})")
    signal_code = t.get("signal_code")
    if signal_code is not None and (not isinstance(signal_code, str) or not signal_code):
        raise _Problem(f"{where}: signal_code must be a name such as SEGV_MAPERR")
    platform = t.get("platform")
    if platform is not None and platform not in tuple(Platform):
        raise _Problem(f"{where}: unknown platform {platform!r} (one of: {', '.join(Platform)})")
    return AdviceEntry(
        lines=lines, category=category, fault_kind=kind, custom_op=custom_op, origin=origin,
        loaded=loaded, host_call=host_call, signal_code=signal_code, unset=tuple(_str_list(t.get("unset", []), f"{where}: unset")),
        platform=platform,
    )  # fmt: skip


def _parse_framework(t: dict[str, Any], i: int) -> Framework:
    name = t.get("name")
    where = f"framework #{i + 1}"
    if not isinstance(name, str) or not _CATEGORY_NAME.match(name):
        raise _Problem(f"{where}: name must be lower-case words joined by '-' (got {name!r})")
    framework = Framework(
        name=name,
        package=_optional_regex(t, "package", where),
        module=_optional_regex(t, "module", where),
        function=_optional_regex(t, "function", where),
        python_file=_optional_regex(t, "python_file", where),
    )
    if not any((framework.package, framework.module, framework.function, framework.python_file)):
        raise _Problem(f"{where}: needs at least one of package, module, function, python_file")
    return framework


def _read_skip_file(path: Path) -> list[str]:
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _merge_document(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    """One rules file's tables into the rule set, each by its own merge, in MERGES' order (a
    table may name what an earlier one defines: categories first)."""
    unknown = set(data) - _KNOWN_TOP_LEVEL
    if unknown:
        raise _Problem(f"unknown table(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(_KNOWN_TOP_LEVEL))})")
    for merge in MERGES:
        merge(rs, data, origin)


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    """A top-level [name] table ({} when absent)."""
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise _Problem(f"[{name}] must be a table")
    return table


def _ahead(origin: str, new: list, old: list) -> list:
    """A user's entries go before the built-in ones (they are tried first); built-in ones in order."""
    return new + old if origin != "built-in" else old + new


def _merge_categories(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for i, t in enumerate(_tables(data, "category")):
        name = t.get("name")
        if not isinstance(name, str) or not _CATEGORY_NAME.match(name):
            raise _Problem(f"category #{i + 1}: name must be lower-case words joined by '-' (got {name!r})")
        if name not in rs.categories:
            rs.categories.append(name)


def _merge_settings(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    settings = _table(data, "settings")
    if not settings:
        return
    s = rs.settings
    custom_cat = settings.get("custom_op_category", s.custom_op_category)
    if custom_cat not in rs.categories:
        raise _Problem(f"[settings] custom_op_category: unknown category {custom_cat!r}")
    templates = settings.get("signature_templates", s.signature_templates)
    if not isinstance(templates, bool):
        raise _Problem("[settings] signature_templates must be true or false")
    rs.settings = replace(
        s,
        window=_int_field(settings, "window", "[settings]", s.window, 1, 200),
        distance_penalty=_int_field(settings, "distance_penalty", "[settings]", s.distance_penalty, 0, 100),
        noise_penalty=_int_field(settings, "noise_penalty", "[settings]", s.noise_penalty, 0, 100),
        signature_frames=_int_field(settings, "signature_frames", "[settings]", s.signature_frames, 1, 50),
        signature_templates=templates,
        custom_op_priority=_int_field(settings, "custom_op_priority", "[settings]", s.custom_op_priority, 0, 100),
        custom_op_category=custom_cat,
        line_penalty=_int_field(settings, "line_penalty", "[settings]", s.line_penalty, 0, 100),
        line_reach=_int_field(settings, "line_reach", "[settings]", s.line_reach, 0, 1000),
    )


def _merge_folds(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for i, t in enumerate(_tables(data, "fold")):
        where = f"fold #{i + 1}"
        replacement = t.get("replace", "")
        if not isinstance(replacement, str):
            raise _Problem(f"{where}: replace must be a string")
        rs.folds.append((_compile(t.get("pattern"), f"{where}: pattern"), replacement))


def _merge_modules(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for cls, patterns in _table(data, "modules").items():
        if cls not in MODULE_CLASSES:
            raise _Problem(f"[modules] unknown class {cls!r} (one of: {', '.join(MODULE_CLASSES)})")
        rs.modules[cls].extend(_compile(p, f"[modules] {cls}") for p in _str_list(patterns, f"[modules] {cls}"))
        rs._module_classes.clear()


def _merge_skip(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for role, patterns in _table(data, "skip").items():
        if role not in SKIP_ROLES:
            raise _Problem(f"[skip] unknown list {role!r} (one of: {', '.join(SKIP_ROLES)})")
        rs.skip[role].extend(_compile(p, f"[skip] {role}") for p in _str_list(patterns, f"[skip] {role}"))
        rs._skip_cache = None


# [custom_op] key -> the RuleSet attribute its pattern sets.
_CUSTOM_OP_PATTERNS = {
    "callers": "custom_op_callers",
    "known_namespaces": "custom_op_known_namespaces",
    "tensorflow_names": "custom_op_tensorflow_names",
    "kernel_entry": "custom_op_kernel_entry",
}


def _merge_custom_op(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    custom = _table(data, "custom_op")
    for key, attribute in _CUSTOM_OP_PATTERNS.items():
        if key in custom:
            setattr(rs, attribute, _compile(custom[key], f"[custom_op] {key}"))


def _merge_ops(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    new_ops = []
    for i, t in enumerate(_tables(data, "op")):
        where = f"op #{i + 1}"
        label = t.get("label")
        if label is not None and not isinstance(label, str):
            raise _Problem(f"{where}: label must be a string")
        new_ops.append(
            OpPattern(
                name=str(t.get("name", where)),
                kind=str(t.get("kind", "kernel")),
                function=_compile(t.get("function"), f"{where}: function"),
                exclude=_optional_regex(t, "exclude", where),
                label=label,
                abstract=_optional_regex(t, "abstract", where),
            )
        )
    rs.ops = _ahead(origin, new_ops, rs.ops)


# [fault_kind] lists of message patterns (added to), single patterns and numbers (replaced).
_FAULT_MESSAGE_LISTS = ("heap_messages", "check_messages", "assert_messages", "illegal_instruction_messages")
_FAULT_FRAME_PATTERNS = (
    "terminate_frames", "assert_frames", "stack_protector_frames", "oom_exceptions", "std_library_files", "runtime_libraries",
)  # fmt: skip
_FAULT_NUMBERS = {"stack_overflow_slack": (0, 1 << 30), "recursion_min_frames": (2, 1 << 20), "recursion_min_repeats": (2, 1 << 20)}


def _merge_fault_kind(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    fk = _table(data, "fault_kind")
    if not fk:
        return
    f = rs.fault
    where = "[fault_kind]"
    changes: dict[str, Any] = {}
    for key in _FAULT_MESSAGE_LISTS:
        added = tuple(_compile(p, f"{where} {key}") for p in _str_list(fk.get(key, []), f"{where} {key}"))
        changes[key] = getattr(f, key) + added
    for key in _FAULT_FRAME_PATTERNS:
        changes[key] = _optional_regex(fk, key, where) or getattr(f, key)
    for key, (low, high) in _FAULT_NUMBERS.items():
        changes[key] = _int_field(fk, key, where, getattr(f, key), low, high)
    rs.fault = replace(f, **changes)


def _merge_throw_helpers(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for i, t in enumerate(_tables(data, "throw_helper")):
        where = f"throw_helper #{i + 1}"
        exc = t.get("exception")
        if not isinstance(exc, str) or not exc:
            raise _Problem(f"{where}: missing exception")
        rs.throw_helpers.append(ThrowHelper(_compile(t.get("function"), f"{where}: function"), exc))


def _merge_report_classes(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for i, t in enumerate(_tables(data, "report_class")):
        where = f"report_class #{i + 1}"
        kind = t.get("fault_kind")
        if kind not in FAULT_KINDS:
            raise _Problem(f"{where}: unknown fault_kind {kind!r} (one of: {', '.join(FAULT_KINDS)})")
        rs.report_classes.append(ReportClass(_compile(t.get("pattern"), f"{where}: pattern"), kind))


def _merge_cpu_features(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for i, t in enumerate(_tables(data, "cpu_feature")):
        where = f"cpu_feature #{i + 1}"
        feature = t.get("feature")
        if not isinstance(feature, str) or not feature:
            raise _Problem(f"{where}: missing feature")
        rs.cpu_features.append(CpuFeature(_compile(t.get("pattern"), f"{where}: pattern"), feature, bool(t.get("trap", False))))


def _merge_rules(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    new_rules = [_parse_rule(t, i, origin, rs.categories) for i, t in enumerate(_tables(data, "rule"))]
    seen: set[str] = set()
    for rule in new_rules:
        if rule.name in seen:
            raise _Problem(f"rule {rule.name!r} is defined twice")
        seen.add(rule.name)
    by_name = {r.name: i for i, r in enumerate(rs.rules)}
    for rule in new_rules:
        if rule.name in by_name:
            rs.rules[by_name[rule.name]] = rule  # a user's rule of the same name replaces ours
        else:
            rs.rules.append(rule)


def _merge_frameworks(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    for i, t in enumerate(_tables(data, "framework")):
        framework = _parse_framework(t, i)
        rs.frameworks = [f for f in rs.frameworks if f.name != framework.name] + [framework]


def _merge_advice(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    names = [f.name for f in rs.frameworks]
    new_advice = [_parse_advice(t, i, origin, rs.categories, names) for i, t in enumerate(_tables(data, "advice"))]
    rs.advice = _ahead(origin, new_advice, rs.advice)


def _merge_thread_roles(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    new_roles = []
    for i, t in enumerate(_tables(data, "thread_role")):
        where = f"thread_role #{i + 1}"
        role = t.get("role")
        if not isinstance(role, str) or not role:
            raise _Problem(f"{where}: missing role")
        names = tuple(_compile(p, f"{where}: names") for p in _str_list(t.get("names", []), f"{where}: names"))
        new_roles.append(ThreadRole(role, names, tuple(_str_list(t.get("frames", []), f"{where}: frames"))))
    rs.thread_roles = _ahead(origin, new_roles, rs.thread_roles)


def _merge_launched_from(rs: RuleSet, data: dict[str, Any], origin: str) -> None:
    launched = _table(data, "launched_from")
    rs.op_execution_markers += tuple(_str_list(launched.get("op_execution", []), "[launched_from] op_execution"))
    rs.wait_markers += tuple(_str_list(launched.get("waiting", []), "[launched_from] waiting"))


# The tables of a rules file, merged in this order.
MERGES = (
    _merge_categories,
    _merge_settings,
    _merge_folds,
    _merge_modules,
    _merge_skip,
    _merge_custom_op,
    _merge_ops,
    _merge_fault_kind,
    _merge_throw_helpers,
    _merge_report_classes,
    _merge_cpu_features,
    _merge_rules,
    _merge_frameworks,
    _merge_advice,
    _merge_thread_roles,
    _merge_launched_from,
)


def _load_file(rs: RuleSet, path: Path, origin: str) -> None:
    label = str(path)
    if origin == "built-in":
        data = rulesdata.shipped(path, CLASSIFY_RULES)
    else:
        data = rulesdata.load(path, CLASSIFY_RULES, max_bytes=MAX_RULES_FILE)
    try:
        _merge_document(rs, data, origin)
    except _Problem as e:
        raise BadInput(f"rules file {label}: {e}") from None
    rs.sources.append(label)


def _builtin() -> RuleSet:
    rs = RuleSet()
    token = _built_in.set(True)
    try:
        for role in SKIP_ROLES:
            path = HERE / f"skip_{role}.txt"
            rs.skip[role] = [_compile(p, f"{path.name}") for p in _read_skip_file(path)]
        _load_file(rs, BUILTIN_RULES, "built-in")
    finally:
        _built_in.reset(token)
    return rs


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The built-in rules (cached: they never change while the process runs)."""
    return _builtin()


def load_rules(extra_files: Sequence[Path | str] = ()) -> RuleSet:
    """Built-in rules plus the user's files, in order (later files win)."""
    if not extra_files:
        return default_rules()
    rs = _builtin()
    for path in extra_files:
        _load_file(rs, Path(path), str(path))
    return rs

