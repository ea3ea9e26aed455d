"""Which subsystem the crash belongs to: the best-scoring rule over the top of the stack.

Every frame from the top of the crash (allocator evidence included) down through the culprit's
window takes its best rule; its score is the rule's priority minus a penalty per frame of
distance from the top, so the nearest specific code wins over distant context, yet a generic
frame on top (`TensorShapeBase::dim_size`) yields to the kernel right below it. Abort-message
rules and a custom-op frame take part with the same scoring; Python frames and noise frames
(CPython's eval loop, ...) only decide when nothing else does. A pasted text adds its other
lines (log lines, the command or statement that ran, the libraries it names): line rules score
like the rest, less a penalty per line of distance from the crash's own line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from coreanalyze.classify import layout
from coreanalyze.classify.culprit import CulpritPick
from coreanalyze.classify.customop import CustomOpHit
from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.layoutnames import frame_hits, line_hits, message_hits
from coreanalyze.classify.rules import NOISE_ROLES, Rule, RuleSet

MAX_PYTHON_FRAMES = 30
# A Python frame's file placed by the name index: above the generic rule of TensorFlow's Python
# package (20), below those that name a subsystem's Python entry points (25-40).
PYTHON_PATH_PRIORITY = 22


@dataclass(frozen=True)
class Candidate:
    category: str
    score: int
    distance: int
    source: str  # what matched, for the evidence
    rule: Rule | None = None
    view: FrameView | None = None
    # The categories a line of the text may give this candidate's place to (layout.callers).
    yields_to: tuple[str, ...] = ()


@dataclass(frozen=True)
class CategoryDecision:
    category: str
    winner: Candidate | None
    runner_up: Candidate | None

    def evidence(self) -> list[str]:
        if self.winner is None:
            return ["no rule matched any frame of the crashing thread"]
        w = self.winner
        lines = [f"category {w.category}: {w.source} (score {w.score})"]
        r = self.runner_up
        if r is not None and r.category != w.category:
            lines.append(f"next best: {r.category} from {r.source} (score {r.score})")
        return lines


def _describe(rule: Rule, view: FrameView) -> str:
    where = f"frame #{view.index} {view.label}"
    if view.module_base and not view.python:
        where += f" in {view.module_base}"
    elif view.python and view.frame.file:
        where += f" ({view.frame.file})"
    return f"rule {rule.name} matched {where}"


def decide_category(
    views: Sequence[FrameView],
    pick: CulpritPick,
    abort_message: str | None,
    custom: CustomOpHit | None,
    rules: RuleSet,
    allocator_evidence: bool = True,
    fault_kind: str | None = None,
    context: Sequence[tuple[int, str, bool]] = (),
) -> CategoryDecision:
    """allocator_evidence: False when the report itself names a fault that is not the heap's
    (ASan's stack-overflow inside operator new): allocator frames on top are then incidental.
    fault_kind: the crash's, for rules that apply to one fault kind only.
    context: (distance from the crash's line, line) of a pasted text's other lines."""
    s = rules.settings
    candidates: list[Candidate] = []

    # The ranked native frames: allocator evidence above the culprit, the culprit, its window.
    ranked: list[FrameView] = []
    if pick.native:
        ranked = [*(pick.allocator_frames if allocator_evidence else []), pick.view, *pick.below]
    for distance, v in enumerate(ranked):
        rule = rules.best_native_rule(v.name, v.module_base, fault_kind, v.frame.file or "")
        if rule is not None:
            candidates.append(Candidate(rule.category, rule.priority - s.distance_penalty * distance, distance, _describe(rule, v), rule, v))

    if custom is not None:
        distance = ranked.index(custom.view) if custom.view in ranked else 0
        candidates.append(
            Candidate(
                s.custom_op_category,
                s.custom_op_priority - s.distance_penalty * distance,
                distance,
                f"frame #{custom.view.index} {custom.view.label} is custom-op code: {custom.reason}",
                None,
                custom.view,
            )
        )

    for rule in rules.message_rules(abort_message, fault_kind):
        candidates.append(Candidate(rule.category, rule.priority, 0, f"rule {rule.name} matched the abort message", rule, yields_to=rule.yields_to))

    # Noise frames between the top and the end of the window, at a discount.
    if ranked:
        last = ranked[-1].position
        for v in views[pick.start: last + 1]:
            if v.python or v.role not in NOISE_ROLES:
                continue
            rule = rules.best_native_rule(v.name, v.module_base, fault_kind)
            if rule is not None:
                distance = sum(1 for r in ranked if r.position < v.position)
                candidates.append(Candidate(rule.category, rule.priority - s.noise_penalty - s.distance_penalty * distance, distance, _describe(rule, v), rule, v))

    # TensorFlow's layout (layoutnames.py): the frames' names, the fatal line's source file, the
    # ops the text names. The rules' categories of the frames settle a name in two subsystems.
    neighbours = [c.category for c in candidates if c.view is not None]
    # Of the noise frames, only the C++ library's: a container's method holding TensorFlow's types.
    noise = [v for v in views[pick.start: (ranked[-1].position + 1) if ranked else pick.start] if not v.python and v.role == "runtime"]
    hits = [*frame_hits(ranked, s.distance_penalty, neighbours, fault_kind=fault_kind),
            *frame_hits(noise, s.distance_penalty, neighbours, s.noise_penalty, fault_kind),
            *message_hits(abort_message, neighbours, fault_kind)]
    for h in hits:
        candidates.append(Candidate(h.category, h.score, h.distance, h.source, None, h.view, h.yields_to))

    # Python frames: the only frames of a faulthandler dump, context otherwise.
    python = [v for v in views if v.python][:MAX_PYTHON_FRAMES]
    for rank, v in enumerate(python):
        rule = rules.best_python_rule(v.name, v.frame.file or "", fault_kind)
        if rule is not None:
            score = rule.priority - s.distance_penalty * rank - (s.noise_penalty if ranked else 0)
            candidates.append(Candidate(rule.category, score, rank, _describe(rule, v), rule, v))
        # The file's place in TensorFlow's tree (and its add-on packages'), as for a native frame's
        # source file: below the Python rules that name a subsystem's entry points.
        path = layout.normalize(v.frame.file) if v.frame.file else None
        place = layout.category_of_path(path) if path else None
        if place is not None:
            score = PYTHON_PATH_PRIORITY - s.distance_penalty * rank - (s.noise_penalty if ranked else 0)
            candidates.append(Candidate(place, score, rank, f"frame #{v.index} {v.label}: {path} is {place}", None, v))

    # The stack speaks first: where a frame rule matched, the text's other lines only add context.
    framed = any(c.view is not None for c in candidates)
    # A rule of the crash's own line alone (window 0) reads a bare verdict: a stack of named native
    # frames is more than that, whichever tool printed it and whether or not its line was claimed.
    named_stack = pick.native and pick.view is not None and bool(pick.view.name)
    for rule, distance, line in rules.line_rules(context, fault_kind):
        if rule.window == 0 and named_stack:
            continue
        score = rule.priority - s.line_penalty * min(distance, s.line_reach) - (s.noise_penalty if framed else 0)
        shown = " ".join(line.split())[:160]
        candidates.append(Candidate(rule.category, score, distance, f"rule {rule.name} matched the line `{shown}`", rule))

    framed = any(c.view is not None for c in candidates)
    for h in line_hits(context, s.line_penalty, s.line_reach, s.noise_penalty if framed else 0):
        candidates.append(Candidate(h.category, h.score, h.distance, h.source))

    if not candidates:
        return CategoryDecision("unknown", None, None)
    ordered = sorted(candidates, key=lambda c: (-c.score, c.distance))
    winner = ordered[0]
    if winner.yields_to and not any(c.view is not None for c in candidates):
        # What the message names only detected the fault (a tensor or shape helper's CHECK fires
        # on what its calling kernel passed, glibc's heap check on what some code damaged): with
        # no frame to say more, a line of the text that names the code that ran claims it.
        claimant = next((c for c in ordered[1:] if c.category in winner.yields_to and c.view is None), None)
        if claimant is not None:
            winner = Candidate(claimant.category, winner.score, claimant.distance,
                               f"{winner.source}, which detected what the code that ran did; that code is {claimant.category}'s: {claimant.source}",
                               claimant.rule)  # fmt: skip
    runner = next((c for c in ordered if c.category != winner.category), None)
    return CategoryDecision(winner.category, winner, runner)


def mentioned_category(lines: Sequence[tuple[int, str, bool]], rules: RuleSet, fault_kind: str | None = None) -> Candidate | None:
    """When nothing near a pasted crash named a subsystem (the category is unknown): the
    subsystem the text names anywhere else, by the `anywhere` line rules and the ops its lines
    name, nearest the crash first. lines: the whole text as (distance, line, claimed by a parser)
    (context.whole_text); the rules read every line (the app's name on a claimed verdict), the
    names only the lines no parser read (a frame's names were read as a frame). A process that
    ran TensorFlow Lite, JAX or a tf.data pipeline and died with nothing else said most often
    died there; `unknown` is rarely what its thread concludes."""
    s = rules.settings
    candidates = []
    for rule, distance, line in rules.line_rules(lines, fault_kind, anywhere=True):  # reads every line, claimed or not
        shown = " ".join(line.split())[:160]
        score = rule.priority - s.line_penalty * min(distance, s.line_reach)
        candidates.append(Candidate(rule.category, score, distance, f"nothing nearer the crash named a subsystem; rule {rule.name} matched the line `{shown}`", rule))
    for h in line_hits([t for t in lines if not t[2]], s.line_penalty, s.line_reach):
        candidates.append(Candidate(h.category, h.score, h.distance, f"nothing nearer the crash named a subsystem; {h.source}"))
    return min(candidates, key=lambda c: (-c.score, c.distance), default=None)
