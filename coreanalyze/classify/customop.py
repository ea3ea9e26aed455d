"""Frames of custom-op libraries (loaded with tf.load_op_library) in a TensorFlow process.

A custom op is code TensorFlow calls but does not ship: a frame whose library is outside the
TensorFlow wheel, CPython, the system and well-known packages, with TensorFlow frames below it
(its callers). When the backtrace does not name the library (a pasted gdb `bt` shows
`at bad_op.cc:14` for frames with debug info), a frame outside every namespace we know, called
directly by TensorFlow's kernel dispatch, counts as one too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from coreanalyze.base.model import Module
from coreanalyze.classify.culprit import CulpritPick
from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.names import basename
from coreanalyze.classify.rules import RuleSet


@dataclass(frozen=True)
class CustomOpHit:
    view: FrameView
    library_path: str | None  # None when the backtrace did not say
    reason: str

    @property
    def library(self) -> str:
        """The library's name, or the source file when the library is unknown."""
        return basename(self.library_path) or self.view.file_base or "an unknown library"


def is_tensorflow_frame(v: FrameView, rules: RuleSet) -> bool:
    names = rules.custom_op_tensorflow_names
    return v.module_class == "tensorflow" or bool(names is not None and names.search(v.name))


def process_has_tensorflow(views: Sequence[FrameView], modules: Sequence[Module], rules: RuleSet) -> bool:
    if any(is_tensorflow_frame(v, rules) for v in views if not v.python):
        return True
    if any(v.python and "/tensorflow/" in (v.frame.file or "") for v in views):
        return True
    return any(rules.module_class(m.path) == "tensorflow" for m in modules)


def find_custom_op(views: Sequence[FrameView], pick: CulpritPick, modules: Sequence[Module], rules: RuleSet) -> CustomOpHit | None:
    """The topmost custom-op frame from the culprit down through the rules' window."""
    if pick.view is None or pick.view.python:
        return None
    if not process_has_tensorflow(views, modules, rules):
        return None
    native = [v for v in views if not v.python]
    candidates = [pick.view, *pick.below]
    for v in candidates:
        if v.role is not None:
            continue
        callers = [c for c in native if c.position > v.position]
        tf_caller = next((c for c in callers if is_tensorflow_frame(c, rules)), None)
        if tf_caller is not None and _loading_between(callers, tf_caller, rules):
            # TensorFlow is loading the library (static initializers under dlopen), not
            # running one of its kernels: that is library-load, decided by the rules.
            return None
        if v.module_class == "foreign":
            if tf_caller is not None:
                return CustomOpHit(v, v.module_path, f"its library {v.module_base} is not part of TensorFlow, and TensorFlow frame #{tf_caller.index} {tf_caller.label} calls it")
            continue
        if v.module_class is not None or not v.name:
            continue
        known = rules.custom_op_known_namespaces
        if known is not None and known.search(v.name):
            continue
        direct = next((c for c in callers if c.role is None), None)
        if direct is not None and rules.custom_op_callers is not None and rules.custom_op_callers.search(direct.name):
            return CustomOpHit(v, None, f"it is outside TensorFlow's namespaces and is called by TensorFlow's {direct.label} (frame #{direct.index})")
        entry = rules.custom_op_kernel_entry
        if entry is not None and entry.search(v.name) and tf_caller is not None:
            return CustomOpHit(v, None, f"it is a kernel entry point outside TensorFlow's namespaces, called from TensorFlow frame #{tf_caller.index}")
    return None


def _loading_between(callers: Sequence[FrameView], tf_caller: FrameView, rules: RuleSet) -> bool:
    for c in callers:
        if c.position >= tf_caller.position:
            return False
        rule = rules.best_native_rule(c.name, c.module_base)
        if rule is not None and rule.category == "library-load":
            return True
    return False


def loaded_custom_libraries(modules: Sequence[Module], rules: RuleSet, limit: int = 5) -> list[str]:
    """Libraries mapped in the process that may be custom ops (foreign to every known group)."""
    if not any(rules.module_class(m.path) == "tensorflow" for m in modules):
        return []
    found: list[str] = []
    for m in modules:
        if rules.module_class(m.path) != "foreign":
            continue
        path = m.path
        if not re.search(r"\.so(\.[\d.]+)?$", path) or path in found:
            continue
        if m.needed is not None and not any(n.startswith("libtensorflow_framework") for n in m.needed):
            continue  # an op library links TensorFlow's framework; this one does not
        found.append(path)
        if len(found) >= limit:
            break
    return found
