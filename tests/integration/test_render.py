"""Renderers: HTML, Markdown, text, JSON and the terminal verdict, from one Report.

Renderers are pure functions of the model, so most tests build a Report here, filled with the
hostile strings a crafted core can carry. One test renders a report read from a real kernel
core of a crasher whose executable name and command line are HTML/JS/Markdown payloads.
How the HTML behaves in a real browser is tested in test_browser.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from support.contract import waived
from support.coregen import compile_c, run_to_core
from support.paths import CRASHERS, REPO
from support.require import require
from support.safety import assert_safe_html, assert_safe_markdown, class_text, markdown_to_html

from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import (
    Classification,
    CoreInfo,
    Culprit,
    Frame,
    LaunchedFrom,
    Module,
    Report,
    SignalInfo,
    Thread,
    report_from_dict,
)
from coreanalyze.render import FORMATS, render, verdict
from coreanalyze.render.colors import color_wanted
from coreanalyze.render.escaping import md_code, md_fence, md_html_text, md_text
from coreanalyze.render.markdown import CUT_NOTE, TICKET_LIMIT, cut_to_fit
from coreanalyze.render.view import pretty_value, split_signature

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
JS_LINK = "[click me](javascript:alert(1))"
HTML_LINK = '<a href="javascript:alert(1)">x</a>'
TICKS = "a ``` b ```` c `"
CLOSE_TEXTAREA = "</textarea><script>alert(2)</script>"
CLOSE_DETAILS = "</details></summary><script>alert(3)</script>"
ANSI = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred"
BIDI = "safe\u202eexe.sh\udcff"  # a bidi override, then a byte that was not UTF-8

CULPRIT_FN = f"tensorflow::Evil{IMG}::Compute()"
SUSPECT_FN = f"custom_op_{SCRIPT}"


# --------------------------------------------------------------------------------------------
# Reports built for the tests
# --------------------------------------------------------------------------------------------


def hostile_report() -> Report:
    """A full report where every string a core controls is a payload."""
    crashed = Thread(
        tid=4242,
        name=f"worker{SCRIPT}",
        crashed=True,
        role=f"tf-inter-op{IMG}",
        holds_gil=False,
        frames=[
            Frame(0, pc=0x7F0000001000, function=f"memcpy{ANSI}", module="/lib/x86_64-linux-gnu/libc.so.6"),
            Frame(1, pc=0x7F0000002000, function=CULPRIT_FN, module=f"/opt/tf/{IMG}.so", offset=0x1A,
                  file=f"kernels/{SCRIPT}.cc", line=12),
            Frame(2, pc=0x7F0000003000, function=SUSPECT_FN, module=f"/tmp/{JS_LINK}.so", reliable=False),
            Frame(3, kind="python", function=f"step{HTML_LINK}", file=f"/home/u/{TICKS}.py", line=7,
                  source=f"x = run({SCRIPT})", locals={f"k{IMG}": f"'{CLOSE_TEXTAREA}'"}),
            Frame(4, pc=0x55550000, function=None, module=None),
        ],
        registers={"rax": 0, "rip": 0x7F0000001000, "rsp": 0x7FFD00001000, "r12": 18446744073709551488},
    )
    other = Thread(
        tid=4241,
        name=f"python3{CLOSE_DETAILS}",
        role="main",
        holds_gil=True,
        frames=[
            Frame(0, pc=0x7F0000009000, function="__futex_abstimed_wait_common", module="/lib/libc.so.6"),
            Frame(1, kind="python", function="<module>", file="train.py", line=3, source="t.join()"),
        ],
    )
    return Report(
        core=CoreInfo(
            path=f"/var/crash/core.{IMG}",
            pid=4241,
            executable=f"/usr/bin/{SCRIPT}",
            cmdline=f"python3 train.py {SCRIPT} {IMG} {JS_LINK} {HTML_LINK} {TICKS} {CLOSE_TEXTAREA} {ANSI} {BIDI}",
            signal=SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0x10),
            arch="x86_64",
            size=123456,
        ),
        crashing_thread=4242,
        threads=[other, crashed],
        classification=Classification(
            category="kernel-compute",
            fault_kind="null-deref",
            culprit=Culprit(function=CULPRIT_FN, module=f"/opt/tf/{IMG}.so", frame_index=1),
            suspect=Culprit(function=SUSPECT_FN, module=f"/tmp/{JS_LINK}.so", frame_index=2),
            signature=f"null-deref | {CULPRIT_FN}",
            summary=f"An op kernel wrote through a null pointer {SCRIPT} {JS_LINK}",
            evidence=[f"fault address 0x10 {HTML_LINK}", f"# heading {TICKS}"],
            advice=[f"1. Rebuild the op {IMG}", f"- check {CLOSE_DETAILS}", "@everyone see #1 ~~x~~ $x$"],
            abort_message=f"Check failed: {SCRIPT}\n```\n{TICKS}\n{CLOSE_TEXTAREA}\n{ANSI}",
            confidence="high",
            op=f"EvilOp{SCRIPT}",
        ),
        launched_from=LaunchedFrom(tid=4242, file=f"/home/u/{IMG}.py", line=9, function=f"start{SCRIPT}"),
        modules=[
            Module(path="/lib/x86_64-linux-gnu/libc.so.6", build_id="aa11", local_path="/lib/x86_64-linux-gnu/libc.so.6",
                   local_build_id="aa11", status="ok"),
            Module(path=f"/opt/tf/{IMG}.so", build_id=f"bb{SCRIPT}", local_build_id="cc22", status="mismatch",
                   local_path=f"/opt/tf/{IMG}.so"),
            Module(path=f"/tmp/{JS_LINK}|cell.so", build_id="dd33", status="missing"),
        ],
        environment={"python_version": "3.11.7", f"key{SCRIPT}": f"value{IMG}", "nested": {"a": [1, 2]}, "none": None},
        warnings=[f"gdb was slow {SCRIPT}", f"{JS_LINK} {ANSI}"],
        fault_instruction=f"=> 0x7f0000001000 <memcpy+16>:\tmovdqu (%rsi),%xmm0 {SCRIPT}",
        tool_version="0.1.0",
    )


def partial_reports() -> list[Report]:
    """Reports with most things missing: triage, notes only, nothing at all."""
    return [
        Report(),
        Report(source="triage", threads=[Thread(tid=0, crashed=True, frames=[Frame(0), Frame(1, function="f")])],
               classification=Classification(culprit=Culprit(frame_index=7))),
        Report(core=CoreInfo(path="core"), crashing_thread=99,
               threads=[Thread(tid=1, frames=[Frame(0, pc=0x1000)], registers={"rip": 0x1000})]),
        Report(core=CoreInfo(path="", signal=SignalInfo(number=6)), threads=[Thread(tid=5, crashed=True)],
               modules=[Module(path="/x", status="no-build-id")], environment={"a": None},
               classification=Classification(fault_kind="", category="", confidence="", abort_message="")),
    ]


LONG_CXX = (
    "tensorflow::ProcessFunctionLibraryRuntime::RunMultiDeviceSync(tensorflow::FunctionLibraryRuntime::Options const&, "
    "unsigned long, std::vector<std::variant<tensorflow::Tensor, tensorflow::TensorShape>, "
    "std::allocator<std::variant<tensorflow::Tensor, tensorflow::TensorShape> > >*, "
    "std::function<absl::lts_20250814::Status (tensorflow::ProcessFunctionLibraryRuntime::ComponentFunctionData const&, "
    "tensorflow::ProcessFunctionLibraryRuntime::InternalArgs*)>) const"
)
LONG_NAME, LONG_PARAMS = LONG_CXX[:LONG_CXX.index("(")], LONG_CXX[LONG_CXX.index("("):]
SITE = "/usr/lib/python3/dist-packages/tensorflow"


def big_report(threads: int = 60, frames: int = 60, modules: int = 300) -> Report:
    """The size of a busy TensorFlow process: many pool threads with deep C++ stacks, hundreds
    of modules, two of them mismatched; the culprit deep in the crashing thread."""

    def stack(tid: int) -> list[Frame]:
        return [
            Frame(i, pc=0x7F0000000000 + tid * 0x1000 + i, function=f"{LONG_NAME}_{i}{LONG_PARAMS}",
                  module=f"{SITE}/libtensorflow_framework.so.2")
            for i in range(frames)
        ]

    crashed = Thread(tid=1000, crashed=True, name="tf_inter_op", frames=stack(1000))
    culprit = min(50, frames - 1)
    crashed.frames[culprit].function = "my_custom_op::Compute(tensorflow::OpKernelContext*)"
    crashed.frames[culprit].module = f"{SITE}/custom_op.so"
    mods = [Module(path=f"{SITE}/python/_pywrap_{n}.so", build_id=f"{n:040x}", local_path=f"{SITE}/python/_pywrap_{n}.so",
                   local_build_id=f"{n:040x}", status="ok" if n % 3 else "no-build-id") for n in range(modules)]
    mods += [
        Module(path=f"{SITE}/libtensorflow_framework.so.2", build_id="aa" * 20, local_build_id="bb" * 20,
               local_path=f"{SITE}/libtensorflow_framework.so.2", status="mismatch"),
        Module(path=f"{SITE}/custom_op.so", build_id="cc" * 20, local_path=f"{SITE}/custom_op.so",
               local_build_id="cc" * 20, status="ok"),
    ]
    return Report(
        core=CoreInfo(path="core.1000", pid=1000, executable="/usr/bin/python3.11",
                      signal=SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0)),
        crashing_thread=1000,
        threads=[crashed] + [Thread(tid=1001 + n, role="tf-intra-op", frames=stack(1001 + n)) for n in range(threads - 1)],
        classification=Classification(
            category="kernel-compute", fault_kind="null-deref",
            culprit=Culprit("my_custom_op::Compute(tensorflow::OpKernelContext*)", f"{SITE}/custom_op.so", culprit),
            signature="null-deref | my_custom_op::Compute", summary="A custom op wrote through a null pointer.",
            advice=["Rebuild the custom op against the installed TensorFlow."], confidence="high",
        ),
        modules=mods,
        environment={"packages": [{"name": f"pkg{n}", "version": "1.0", "libraries": ["a.so"]} for n in range(200)],
                     "environment_variable_names": [f"VAR{n}" for n in range(200)], "python_version": "3.11.7"},
    )


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------


def test_html_is_well_formed_self_contained_and_has_a_strict_csp():
    html = render(hostile_report(), "html")
    assert_safe_html(html)
    assert "@media print" in html
    assert "max-width" in html  # phone-width rules


def test_html_escapes_every_payload_and_still_shows_it_as_text():
    html = render(hostile_report(), "html")
    doc = assert_safe_html(html)
    for payload in (SCRIPT, IMG, HTML_LINK, CLOSE_TEXTAREA, CLOSE_DETAILS):
        assert payload not in html
    text = "".join(doc.text)
    # The user still sees what the core said, as text.
    for shown in (SCRIPT, IMG, JS_LINK, HTML_LINK, "a ``` b ```` c `", CLOSE_DETAILS):
        assert shown in text, shown
    # Control characters and bidi overrides are shown as escapes, never emitted.
    assert "\x1b" not in html and "\u202e" not in html
    assert "\\x1b]0;pwned" in text and "safe\\u202eexe.sh\\udcff" in text
    html.encode("utf-8")  # no lone surrogate reaches the page


def test_html_verdict_first_then_sections_in_order():
    html = render(hostile_report(), "html")
    order = ['id="verdict"', 'id="evidence"', 'id="abort-message"', 'id="crashing-thread"', 'id="fault"', 'id="launched-from"',
             'id="threads"', 'id="modules"', 'id="environment"', 'id="warnings"', 'id="core"', 'id="markdown"']
    positions = [html.index(marker) for marker in order]
    assert positions == sorted(positions)
    verdict_html = html[html.index('id="verdict"'):html.index('id="crashing-thread"')]
    for fact in ("kernel-compute", "null-deref", "An op kernel wrote through a null pointer", "confidence: high",
                 "SIGSEGV (SEGV_MAPERR)", "0x10", "Rebuild the op", "fault address 0x10"):
        assert fact in verdict_html, fact
    assert "2 modules differ from the local files" in verdict_html


def test_html_culprit_suspect_python_and_unreliable_frames_are_marked():
    doc = assert_safe_html(render(hostile_report(), "html"))
    rows = [(t, a) for t, a in doc.tags if t == "tr" and "frame" in (a.get("class") or "").split()]
    culprit_rows = [a for _, a in rows if "culprit" in a["class"].split()]
    assert [a["id"] for a in culprit_rows] == ["t4242-f1"]
    assert CULPRIT_FN in class_text(doc, "culprit")
    assert SUSPECT_FN in class_text(doc, "suspect")
    assert "kernels/<script>alert(1)</script>.cc:12" in class_text(doc, "culprit")
    # Python frames interleaved and distinct, with source line and locals.
    assert "step" + HTML_LINK in class_text(doc, "py")
    assert "x = run(<script>alert(1)</script>)" in class_text(doc, "source")
    assert "'" + CLOSE_TEXTAREA + "'" in class_text(doc, "locals")
    # The frame whose module's build-id differs is flagged, and so is the one from a missing module.
    unreliable = [a["id"] for _, a in rows if "unreliable" in a["class"].split()]
    assert unreliable == ["t4242-f1", "t4242-f2"]
    # Registers of the crashing thread in hex, the faulting instruction, the frame with no name.
    assert "0xffffffffffffff80" in class_text(doc, "regs")
    assert "movdqu (%rsi),%xmm0" in class_text(doc, "instruction")
    assert "??" in class_text(doc, "function")


def test_html_folds_other_threads_with_name_role_and_gil_and_flags_bad_modules():
    doc = assert_safe_html(render(hostile_report(), "html"))
    details = [a for t, a in doc.tags if t == "details"]
    # The evidence, one per other thread, the Markdown block; none open.
    assert [a.get("id") for a in details] == ["evidence", "thread-4241", None]
    assert not any("open" in a for a in details)
    threads = class_text(doc, "thread")
    assert 'Thread 4241 "python3' + CLOSE_DETAILS + '"' in threads
    assert "main" in threads and "holds the GIL" in threads and "__futex_abstimed_wait_common" in threads
    badges = [a["class"] for t, a in doc.tags if t == "span" and "status-mismatch" in (a.get("class") or "")]
    assert badges, "a mismatched module must carry its badge"
    modules = class_text(doc, "modules")
    assert modules.index("mismatch") < modules.index("ok"), "problems are listed first"
    assert "value" + IMG in "".join(doc.text)


def test_html_carries_the_markdown_for_a_ticket_in_a_readonly_textarea():
    report = hostile_report()
    html = render(report, "html")
    doc = assert_safe_html(html)
    textareas = [a for t, a in doc.tags if t == "textarea"]
    assert len(textareas) == 1 and "readonly" in textareas[0]
    assert "<summary>Markdown for a ticket</summary>" in html
    # The textarea holds the Markdown render, unescaped by the browser back to the original.
    start = html.index("<textarea")
    inner = html[html.index(">", start) + 1:html.index("</textarea>")]
    from html import unescape

    assert unescape(inner) == render(report, "markdown")


def test_html_elides_deep_stacks_but_keeps_the_culprit():
    frames = [Frame(i, pc=0x1000 + i, function=f"recurse_{i}", module="/bin/x") for i in range(20_000)]
    report = Report(
        core=CoreInfo(path="core", signal=SignalInfo(number=11, name="SIGSEGV")),
        crashing_thread=1,
        threads=[Thread(tid=1, crashed=True, frames=frames)]
        + [Thread(tid=100 + n, frames=frames[:500]) for n in range(300)],
        classification=Classification(fault_kind="stack-overflow", culprit=Culprit("recurse_12345", "/bin/x", 12345)),
        environment={"huge": "x" * 1_000_000},
    )
    html = render(report, "html")
    doc = assert_safe_html(html)
    assert "recurse_12345" in class_text(doc, "culprit")
    assert "frames omitted" in class_text(doc, "gap")
    assert "recurse_19999" in html  # the bottom of the stack is kept
    assert "recurse_5000<" not in html
    assert len(html) < 12_000_000
    assert "more threads are in the JSON report" in html
    assert len(render(report, "markdown")) <= TICKET_LIMIT


@pytest.mark.parametrize("fmt", FORMATS)
def test_partial_reports_render_in_every_format(fmt):
    for report in partial_reports():
        if report.classification.fault_kind == "":
            with waived("empty vocabulary fields, which no stage writes: the renderers must still cope"):
                out = render(report, fmt)
        else:
            out = render(report, fmt)
        assert out.endswith("\n") or fmt == "html"
        if fmt == "html":
            assert_safe_html(out)
            assert "?" in out or report.core is None
        if fmt == "markdown":
            assert_safe_markdown(out)
        if fmt == "json":
            assert report_from_dict(json.loads(out)) == report
        assert verdict(report)


def test_unknown_format_is_bad_input():
    with pytest.raises(BadInput):
        render(Report(), "pdf")



def test_html_shows_parameter_lists_quieter_than_the_name():
    doc = assert_safe_html(render(big_report(threads=2, frames=3, modules=3), "html"))
    assert class_text(doc, "fname").startswith("tensorflow::ProcessFunctionLibraryRuntime::RunMult")
    params = class_text(doc, "params")
    assert params.startswith("(tensorflow::FunctionLibraryRuntime::Options const&, ") and ") const" in params


def test_split_signature():
    assert split_signature("ns::Op::Compute(tensorflow::OpKernelContext*)") == ("ns::Op::Compute", "(tensorflow::OpKernelContext*)")
    assert split_signature("a::f(std::function<void (int)>) const &") == ("a::f", "(std::function<void (int)>) const &")
    assert split_signature("Foo::operator()(int)") == ("Foo::operator()", "(int)")
    assert split_signature("(anonymous namespace)::ScatterOp::Compute") == ("(anonymous namespace)::ScatterOp::Compute", "")
    assert split_signature("(anonymous namespace)::f()") == ("(anonymous namespace)::f", "()")
    assert split_signature("(broken)") == ("(broken)", "")
    assert split_signature("unbalanced)") == ("unbalanced)", "")
    assert split_signature("store_result") == ("store_result", "")
    huge = "f(" + "x" * 30_000 + ")"
    assert split_signature(huge) == (huge, "")


def test_html_folds_modules_that_do_not_matter_for_this_crash():
    report = big_report(threads=2, frames=60, modules=300)
    doc = assert_safe_html(render(report, "html"))
    folded = [a for t, a in doc.tags if t == "details" and a.get("id") == "other-modules"]
    assert len(folded) == 1 and "open" not in folded[0]
    tables = [a for t, a in doc.tags if t == "table" and a.get("class") == "modules"]
    assert len(tables) == 2
    html = render(report, "html")
    shown = html[html.index('id="modules"'):html.index('id="other-modules"')]
    # The mismatched module, the culprit's module and nothing else stay in view.
    assert "status-mismatch" in shown and "custom_op.so" in shown and "_pywrap_1.so" not in shown
    assert "300 other modules · 100 no-build-id · 200 ok" in "".join(doc.text)
    assert "same path" in class_text(doc, "modules")


def test_html_folds_long_environment_values_and_lists_packages_in_a_table():
    doc = assert_safe_html(render(big_report(threads=1, frames=1, modules=1), "html"))
    value = class_text(doc, "value")
    assert "VAR0, VAR1, " in value and "VAR199" in value and "pkg0" not in value
    packages = class_text(doc, "packages")
    assert "pkg0" in packages and "pkg199" in packages and "a.so" in packages
    assert [a.get("class") for t, a in doc.tags if t == "details" and a.get("class") == "value"] == ["value"]


def test_pretty_value():
    assert pretty_value([{"name": "numpy", "version": "2.1", "libraries": ["x.so"]}]) == "numpy 2.1"
    assert pretty_value({"hwcap": "0x1", "features": ["avx", "fma"], "deep": {"a": 1}}) == \
        'hwcap: 0x1; features: avx, fma; deep: {"a": 1}'
    assert pretty_value([1, None, "x"]) == "1, ?, x"
    assert pretty_value(list(range(1005))).endswith("999, … (5 more)")
    assert pretty_value(None) == "?" and pretty_value("text") == "text"


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def test_markdown_puts_the_verdict_first_and_escapes_payloads():
    md = render(hostile_report(), "markdown")
    assert md.startswith("### coreanalyze: null-deref in ")
    first_fence = md.index("```")
    for fact in ("kernel-compute", "**Confidence:** high", "An op kernel wrote through a null pointer", "Rebuild the op"):
        assert md.index(fact) < first_fence, fact
    doc = assert_safe_markdown(md)
    text = "".join(doc.text)
    for shown in (SCRIPT, JS_LINK, HTML_LINK, CLOSE_DETAILS, "@everyone see #1 ~~x~~ $x$", "1. Rebuild the op"):
        assert shown in text, shown
    assert "\x1b" not in md and "\u202e" not in md


def test_markdown_frames_in_a_fence_and_long_parts_folded():
    md = render(hostile_report(), "markdown")
    html = markdown_to_html(md)
    doc = assert_safe_markdown(md)
    blocks = [b for b in re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", html, re.S)]
    from html import unescape

    blocks = [unescape(b) for b in blocks]
    assert "(mismatch), " in "".join(doc.text)
    crash_block = next(b for b in blocks if "<== culprit" in b)
    assert CULPRIT_FN in crash_block and "[py] step" in crash_block and "<== suspect" in crash_block
    # The abort message survives whole inside its fence despite the backtick runs in it.
    assert any(f"Check failed: {SCRIPT}\n```\n{TICKS}\n{CLOSE_TEXTAREA}" in b for b in blocks)
    summaries = [s for s in re.findall(r"<summary>(.*?)</summary>", html, re.S)]
    assert [s.split(" (")[0] for s in summaries] == [
        "Why this verdict", "Faulting instruction and registers", "Other threads", "Modules", "Environment", "Core",
        "Report it upstream: TensorFlow's issue form, filled in"]
    assert html.count("<details>") == html.count("</details>") == 7
    # The module table keeps its five columns although a path holds a "|".
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert len(rows) == 4 and all(len(re.findall(r"<t[hd][ >]", row)) == 5 for row in rows)
    assert f"/tmp/{JS_LINK}|cell.so" in unescape(html)
    assert "python3" + CLOSE_DETAILS in "".join(doc.text)


def test_markdown_escape_helpers():
    assert md_text("[x](javascript:alert(1))") == r"\[x\]\(javascript:alert\(1\)\)"
    assert md_text("1. item") == r"1\. item"
    assert md_text("- item\nnext") == r"\- item next"
    assert md_code("a `` b") == "```a `` b```"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code("") == "?"
    fenced = md_fence("x\n`````\ny")
    assert fenced.startswith("``````text\n") and fenced.endswith("\n``````\n")
    assert md_html_text('<b a="1">&#1;') == "&lt;b a=&#34;1&#34;&gt;&amp;&#35;1;"



def test_markdown_of_a_big_process_fits_in_a_ticket_and_keeps_the_verdict():
    report = big_report()
    md = render(report, "markdown")
    assert len(md) <= TICKET_LIMIT, len(md)
    doc = assert_safe_markdown(md)
    text = "".join(doc.text)
    assert md.startswith("### coreanalyze: null-deref in `my_custom_op::Compute")
    assert "#50  0x00007f00003e8032 in my_custom_op::Compute" in text and "<== culprit" in text
    assert "Other threads (59)" in text and "Thread 1001" in text
    assert "Shortened to fit in a ticket" in text
    # The module table lists what matters for the crash and counts the rest.
    assert "**mismatch**" in md and "custom\\_op.so" not in md and "custom_op.so" in text
    assert "300 more modules (100 no-build-id, 200 ok) are listed in the HTML and JSON reports." in text
    # The HTML carries the same ticket-sized Markdown.
    html = render(report, "html")
    from html import unescape

    inner = html[html.index(">", html.index("<textarea")) + 1:html.index("</textarea>")]
    assert unescape(inner) == md


def test_markdown_of_a_small_report_is_not_shortened():
    md = render(hostile_report(), "markdown")
    assert "Shortened" not in md and CUT_NOTE not in md


def test_markdown_is_cut_at_a_block_boundary_as_a_last_resort():
    report = big_report(threads=3, frames=10, modules=2)
    report.classification.advice = [f"step {n}: " + "x" * 3000 for n in range(40)]
    report.classification.abort_message = "\n".join(f"line {n} " + "y" * 200 for n in range(30))
    md = render(report, "markdown")
    assert len(md) <= TICKET_LIMIT and md.endswith(CUT_NOTE + "\n")
    assert_safe_markdown(md)
    assert md.startswith("### coreanalyze: null-deref")
    # cut_to_fit closes what it cut through.
    fenced = "intro\n\n<details><summary>x</summary>\n\n```text\n" + "frame\n" * 10_000 + "```\n\n</details>\n"
    cut = cut_to_fit(fenced, 2000)
    assert len(cut) <= 2000 and cut.count("```") == 2 and cut.count("<details>") == cut.count("</details>") == 1
    html = markdown_to_html(cut)
    assert html.count("<pre>") == 1 and "Cut to fit in a ticket" in html.split("</details>")[-1]


# --------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------


def test_json_follows_the_contract_and_round_trips():
    report = hostile_report()
    out = render(report, "json")
    assert out.endswith("}\n")
    data = json.loads(out)
    assert list(data)[:2] == ["schema", "tool_version"] and data["schema"] == "coreanalyze/1"
    assert data["core"]["signal"]["address"] == "0x10"
    assert data["threads"][1]["frames"][0]["pc"] == "0x7f0000001000"
    assert data["classification"]["culprit"] == {"function": CULPRIT_FN, "module": f"/opt/tf/{IMG}.so", "frame_index": 1}
    assert data["core"]["cmdline"] == report.core.cmdline  # JSON keeps everything, unclipped
    assert report_from_dict(data) == report


# --------------------------------------------------------------------------------------------
# Text and verdict
# --------------------------------------------------------------------------------------------

ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_text_is_plain_without_color_and_never_passes_control_characters():
    report = hostile_report()
    plain = render(report, "text", color=False)
    assert "\x1b" not in plain
    assert not CONTROL.search(plain.replace("\t", ""))
    assert "\\x1b]0;pwned" in plain and "safe\\u202eexe.sh" in plain
    plain.encode("utf-8")
    render(report, "markdown").encode("utf-8")
    for section in ("What to do", "Crashing thread 4242", "Abort message", "Faulting instruction and registers",
                    "Other threads (1)", "Modules (3", "Environment", "Warnings", "Core"):
        assert section in plain, section
    assert re.search(r"#1 +0x00007f0000002000 in tensorflow::Evil.*<== culprit", plain)
    colored = render(report, "text", color=True)
    assert ANSI_SGR.search(colored)
    # Only our own SGR sequences: the payload's OSC/erase sequences stay escaped.
    assert not CONTROL.search(ANSI_SGR.sub("", colored).replace("\t", ""))
    assert ANSI_SGR.sub("", colored) == plain


def test_verdict_names_signal_fault_culprit_frames_and_report_path():
    report = hostile_report()
    out = verdict(report, report_path="/tmp/reports/core.html")
    assert "\x1b" not in out
    first = out.splitlines()[0]
    assert first.startswith("SIGSEGV (SEGV_MAPERR) at 0x10 — null-deref in tensorflow::Evil")
    assert "kernel-compute" in first
    assert 'thread        4242 "worker<script>alert(1)</script>"' in out
    assert "culprit       " + CULPRIT_FN in out
    assert "abort         Check failed: <script>alert(1)</script>" in out
    assert "summary       An op kernel" in out
    assert "report        /tmp/reports/core.html" in out
    frames = [line for line in out.splitlines() if re.match(r"^(  frames +| {16})#\d", line)]
    assert len(frames) == 5 and "[py] step" in frames[3] and "<== culprit" in frames[1]
    assert "\\x1b]0;pwned" in out and not CONTROL.search(out)
    colored = verdict(report, color=True, report_path="r.html")
    assert ANSI_SGR.search(colored) and ANSI_SGR.sub("", colored) == verdict(report, report_path="r.html")


def test_verdict_keeps_a_deep_culprit_and_counts_the_rest():
    frames = [Frame(i, pc=0x1000 + i, function=f"f{i}") for i in range(40)]
    report = Report(threads=[Thread(tid=1, crashed=True, frames=frames)],
                    classification=Classification(culprit=Culprit("f20", None, 20)))
    out = verdict(report)
    assert "f20  <== culprit" in out and "frames omitted" in out and "... 17 more frames" in out
    assert "report" not in out


def test_color_is_wanted_only_on_a_terminal_without_no_color():
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty:
            assert color_wanted(tty, {"TERM": "xterm"})
            assert not color_wanted(tty, {"TERM": "xterm", "NO_COLOR": "1"})
            assert not color_wanted(tty, {"TERM": "dumb"})
    finally:
        os.close(master)
        os.close(slave)
    import io

    assert not color_wanted(io.StringIO(), {})



# --------------------------------------------------------------------------------------------
# Paging on a terminal
# --------------------------------------------------------------------------------------------

PAGER_SCRIPT = """
import sys
data = sys.stdin.buffer.read()
open(sys.argv[1], "wb").write(data)
sys.stdout.write("PAGER SAW %d BYTES\\n" % len(data))
"""


def _run_page(text: str, tmp_path: Path, *, tty: bool, rows: int = 24, env: dict | None = None) -> tuple[str, bytes | None]:
    """Call pager.page(text) in a child whose stdout is a real pseudo-terminal (or a pipe);
    returns what reached the terminal and what the pager read, if it ran."""
    import fcntl
    import shlex
    import struct
    import subprocess
    import sys
    import termios

    script = tmp_path / "pager.py"
    script.write_text(PAGER_SCRIPT)
    seen = tmp_path / "seen"
    seen.unlink(missing_ok=True)
    (tmp_path / "text").write_text(text)
    child_env = {k: v for k, v in os.environ.items() if k not in ("PAGER", "COREANALYZE_PAGER", "LESS")}
    child_env["PYTHONPATH"] = str(REPO)
    child_env["PAGER"] = shlex.join([sys.executable, str(script), str(seen)])  # a command line: paths quoted
    child_env.update(env or {})
    code = (
        "import sys; from coreanalyze.render import page; "
        f"page(open({str(tmp_path / 'text')!r}).read())"
    )
    if not tty:
        run = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout.decode(), seen.read_bytes() if seen.exists() else None
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 80, 0, 0))
        proc = subprocess.Popen([sys.executable, "-c", code], env=child_env, stdout=slave, stderr=subprocess.PIPE)
        os.close(slave)
        slave = -1
        out = bytearray()
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    return out.decode().replace("\r\n", "\n"), seen.read_bytes() if seen.exists() else None


def test_long_output_on_a_terminal_goes_through_the_pager(tmp_path):
    text = render(big_report(threads=3, frames=40, modules=20), "text")
    assert text.count("\n") > 24
    shown, paged = _run_page(text, tmp_path, tty=True)
    assert paged == text.encode()
    assert shown.strip() == f"PAGER SAW {len(text.encode())} BYTES"


def test_short_or_piped_output_and_no_pager_are_written_as_is(tmp_path):
    short = "SIGSEGV at 0x0 — null-deref in store_result\n"
    shown, paged = _run_page(short, tmp_path, tty=True)
    assert paged is None and shown == short
    long_text = "".join(f"line {n}\n" for n in range(200))
    shown, paged = _run_page(long_text, tmp_path, tty=False)
    assert paged is None and shown == long_text
    for off in ({"PAGER": ""}, {"PAGER": "cat"}, {"COREANALYZE_PAGER": ""}, {"PAGER": "no-such-pager-here"}):
        shown, paged = _run_page(long_text, tmp_path, tty=True, env=off)
        assert paged is None and shown == long_text, off


def test_pager_command_defaults_to_less_with_colours_passed_through():
    from coreanalyze.render.pager import LESS_DEFAULTS, pager_command

    assert LESS_DEFAULTS == "FRX"
    less = shutil.which("less")
    assert pager_command({}) == (["less"] if less else None)
    assert pager_command({"PAGER": "less -S", "COREANALYZE_PAGER": "cat"}) is None
    assert pager_command({"PAGER": "'unbalanced"}) is None


# --------------------------------------------------------------------------------------------
# A real core
# --------------------------------------------------------------------------------------------

HOSTILE_EXE_NAME = 'x"><img src=x onerror=alert(1)>'
HOSTILE_ARGS = [SCRIPT, "](javascript:alert(1))", "``` ````"]


@pytest.fixture(scope="module")
def hostile_crash(tmp_path_factory):
    """null_thread.c built under a name that is an HTML payload, run with payload arguments."""
    require("gcc")
    workdir = tmp_path_factory.mktemp("hostile")
    exe = compile_c(CRASHERS / "null_thread.c", workdir / HOSTILE_EXE_NAME)
    return run_to_core("hostile", [str(exe), *HOSTILE_ARGS], workdir)


def _function_at(path: str, module_start: int, pc: int) -> str | None:
    """Name a pc inside a local ELF from its .symtab (the crasher is built with -g, PIE)."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        first_load = min(s["p_vaddr"] for s in elf.iter_segments() if s["p_type"] == "PT_LOAD")
        address = pc - module_start + (first_load & ~0xFFF)
        for sym in elf.get_section_by_name(".symtab").iter_symbols():
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"] <= address < sym["st_value"] + sym["st_size"]:
                return sym.name
    return None


def report_from_real_core(core: Path) -> Report:
    from coreanalyze.corefile import read_core, threads_from_notes, to_core_info
    from coreanalyze.corefile.modules import module_table

    with read_core(core) as notes:
        report = Report(
            core=to_core_info(notes),
            crashing_thread=notes.crashing_tid,
            threads=threads_from_notes(notes),
            modules=module_table(notes),
            warnings=list(notes.warnings),
            tool_version="test",
        )
    crashed = report.crashed_thread
    top = crashed.frames[0]
    module = next(m for m in report.modules if m.path == top.module)
    top.function = _function_at(module.local_path, module.start, top.pc)
    report.classification = Classification(
        fault_kind="null-deref", category="unknown",
        culprit=Culprit(function=top.function, module=top.module, frame_index=top.index),
        summary=f"{report.core.signal.name} in {top.function}",
    )
    return report


def test_report_from_a_real_core_with_hostile_names(hostile_crash, tmp_path):
    report = report_from_real_core(hostile_crash.core)
    assert report.classification.culprit.function == "store_result"
    assert HOSTILE_EXE_NAME in report.core.executable and SCRIPT in report.core.cmdline

    html = render(report, "html")
    (tmp_path / "report.html").write_text(html)
    doc = assert_safe_html(html)
    assert "<img" not in html and SCRIPT not in html
    culprit = class_text(doc, "culprit")
    assert "store_result" in culprit and HOSTILE_EXE_NAME in culprit
    text = "".join(doc.text)
    assert "SIGSEGV (SEGV_MAPERR)" in text and f"{report.core.pid}" in text
    assert report.core.cmdline in text  # the payload command line, shown as text
    rip = report.crashed_thread.registers["rip"]
    assert f"0x{rip:016x}" in class_text(doc, "regs")
    assert "libc.so.6" in class_text(doc, "modules")

    md = render(report, "markdown")
    md_doc = assert_safe_markdown(md)
    assert SCRIPT in "".join(md_doc.text)

    data = json.loads(render(report, "json"))
    assert data["core"]["signal"]["name"] == "SIGSEGV" and data["core"]["signal"]["address"] == "0x0"
    assert report_from_dict(data) == report

    plain = render(report, "text")
    assert "store_result" in plain and "\x1b" not in plain

    out = verdict(report, report_path=str(tmp_path / "report.html"))
    assert out.startswith("SIGSEGV (SEGV_MAPERR) at 0x0 — null-deref in store_result")
    assert f"thread        {report.crashing_thread}" in out
    assert str(tmp_path / "report.html") in out
    assert "\x1b" not in out
