"""The HTML report in a real browser: headless Chromium driven over WebDriver (selenium).

The reports come from the real command line run on real kernel cores. Chromium opens each
report from a file:// URL and the tests look at what a person would see: the verdict, the
highlighted culprit, threads that unfold on a click, a page that fits a phone, a print that
keeps the crashing thread whole, and, from the DevTools network log, that the page asks for
nothing beyond its own file.

Screenshots and the printed PDF are kept under $COREANALYZE_TEST_ARTIFACTS (else pytest's
temporary directory); their paths are printed.

Chromium and chromedriver come from Debian's `chromium` and `chromium-driver` packages
(setup.sh installs them); in CI a missing browser, driver or selenium fails the run.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from support.clirun import run_cli
from support.coregen import compile_c, run_to_core
from support.paths import CRASHERS
from support.require import require

DESKTOP = (1000, 1400)
PHONE = (390, 844)

# Chromium running as root in a container, on a machine without internet: no sandbox, no
# GPU, and none of the background traffic (component updates, sync, QUIC probes, first-run
# pages) that would otherwise show up in, or slow down, a network check.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
)

HOSTILE_EXE_NAME = 'x"><img src=x onerror=alert(1)>'
HOSTILE_ARGS = ["<script>alert(2)</script>", "<style>body{display:none}</style>", "](javascript:alert(3))"]


# --------------------------------------------------------------------------------------------
# The browser
# --------------------------------------------------------------------------------------------


def _require_selenium():
    return require(module="selenium.webdriver", what="selenium (the `test` extra)")


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    where = os.environ.get("COREANALYZE_TEST_ARTIFACTS")
    path = Path(where) if where else tmp_path_factory.mktemp("browser-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def keep(artifacts: Path, name: str, data: bytes, capsys) -> Path:
    path = artifacts / name
    path.write_bytes(data)
    with capsys.disabled():
        print(f"\n[artifact] {path}")
    return path


@pytest.fixture(scope="module")
def browser():
    webdriver = _require_selenium()
    chromium = require("chromium")
    chromedriver = require("chromedriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="coreanalyze-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    # The performance log carries the DevTools Network events: every request the page makes.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        driver.set_page_load_timeout(60)
        driver.get("about:blank")
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def set_viewport(driver, width: int, height: int, *, mobile: bool = False) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )


def set_media(driver, media: str = "", color_scheme: str = "") -> None:
    features = [{"name": "prefers-color-scheme", "value": color_scheme}] if color_scheme else []
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": media, "features": features})


def open_page(driver, page: Path) -> list[str]:
    """Load page fresh at desktop size; the URLs of every request made while loading it."""
    set_viewport(driver, *DESKTOP)
    set_media(driver)
    driver.get("about:blank")
    driver.get_log("performance")  # drop what came before
    driver.get_log("browser")
    driver.get(page.as_uri())  # returns once the page has loaded
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            requests.append(params["request"]["url"])
        elif message["method"] in ("Network.webSocketCreated", "Network.webTransportCreated"):
            requests.append(params.get("url", "?"))
    return requests


def screenshot(driver) -> bytes:
    return base64.b64decode(driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})["data"])


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


# --------------------------------------------------------------------------------------------
# Reports of real cores, written by the real command line
# --------------------------------------------------------------------------------------------


def report_of(case, out: Path) -> Path:
    run = run_cli(str(case.core), "--python", str(case.exe), "-o", str(out))
    assert run.code == 0, run.stderr
    assert out.is_file()
    return out


@pytest.fixture(scope="module")
def null_thread_page(cores, tmp_path_factory) -> Path:
    case = cores.c_crash("null_thread")
    return report_of(case, tmp_path_factory.mktemp("report") / "null_thread.html")


@pytest.fixture(scope="module")
def hostile_page(cores, tmp_path_factory) -> Path:
    """null_thread.c built under a name that is an HTML payload and run with payload arguments."""
    require("gcc")
    workdir = tmp_path_factory.mktemp("hostile")
    exe = compile_c(CRASHERS / "null_thread.c", workdir / HOSTILE_EXE_NAME)
    case = run_to_core("hostile", [str(exe), *HOSTILE_ARGS], workdir)
    return report_of(case, workdir / "report.html")


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_the_network_log_sees_a_request_when_a_page_makes_one(browser, tmp_path):
    """The control for the no-request checks below: the log is not blind."""
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><img src="http://127.0.0.1:9/probe.png"><p>control</p>')
    requests = open_page(browser, page)
    assert requests == [page.as_uri(), "http://127.0.0.1:9/probe.png"]


def test_report_shows_verdict_and_culprit_and_makes_no_request(browser, null_thread_page, artifacts, capsys):
    requests = open_page(browser, null_thread_page)
    assert requests == [null_thread_page.as_uri()], "the report must load nothing but itself"
    assert js(browser, "return performance.getEntriesByType('resource').length") == 0
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors  # a blocked load (CSP) or a broken page would be logged here

    # The verdict comes first and names what happened.
    first = js(browser, "return document.body.firstElementChild")
    assert first.get_attribute("id") == "verdict" and first.is_displayed()
    headline = browser.find_element("css selector", "#verdict h1").text
    assert headline.startswith("null-deref in ") and "store_result" in headline
    badges = [b.text for b in browser.find_elements("css selector", "#verdict .badge")]
    assert "null-deref" in badges and "SIGSEGV (SEGV_MAPERR)" in badges

    # Exactly one frame is the culprit, in the crashing thread, and it looks different.
    culprits = browser.find_elements("css selector", "tr.frame.culprit")
    assert len(culprits) == 1
    culprit = culprits[0]
    assert "store_result" in culprit.text and culprit.is_displayed()
    assert js(browser, "return arguments[0].closest('section').id", culprit) == "crashing-thread"
    plain = browser.find_element("css selector", "#crashing-thread tr.frame:not(.culprit)")
    culprit_bg = culprit.find_element("css selector", "td").value_of_css_property("background-color")
    plain_bg = plain.find_element("css selector", "td").value_of_css_property("background-color")
    assert culprit_bg != plain_bg and culprit_bg not in ("rgba(0, 0, 0, 0)", "transparent")
    assert "inset" in culprit.find_element("css selector", "td").value_of_css_property("box-shadow")
    # The verdict links to it.
    link = browser.find_element("css selector", f"#verdict a[href='#{culprit.get_attribute('id')}']")
    link.click()
    assert js(browser, "return location.hash") == f"#{culprit.get_attribute('id')}"
    top, bottom = js(browser, "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom]", culprit)
    assert -1 <= top and bottom <= DESKTOP[1], "the link scrolls the culprit into view"

    # Other threads are folded, and open on a click.
    threads = browser.find_elements("css selector", "details.thread")
    assert threads, "null_thread has a main thread besides the crashing worker"
    for details in threads:
        assert details.get_attribute("open") is None
        table = details.find_element("css selector", "table.frames")
        assert not table.is_displayed()
        details.find_element("css selector", "summary").click()
        assert details.get_attribute("open") is not None
        assert table.is_displayed()
    assert any("main" in d.find_element("css selector", "table.frames").text for d in threads)

    browser.execute_script("window.scrollTo(0, 0)")
    for details in threads:  # back to how the page opens, for the picture
        details.find_element("css selector", "summary").click()
    keep(artifacts, "report-desktop.png", screenshot(browser), capsys)


def test_report_fits_a_phone(browser, null_thread_page, artifacts, capsys):
    open_page(browser, null_thread_page)
    set_viewport(browser, *PHONE, mobile=True)
    browser.get(null_thread_page.as_uri())
    for summary in browser.find_elements("css selector", "details > summary"):
        summary.click()  # open everything: folded content must fit too
    width = js(browser, "return window.innerWidth")
    assert width == PHONE[0]
    assert js(browser, "return document.documentElement.scrollWidth") <= width
    # Nothing sticks out of the screen, except inside a table's own horizontal scroller.
    sticking_out = js(
        browser,
        """
        const out = [];
        for (const el of document.body.querySelectorAll('*')) {
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.right <= innerWidth + 1) continue;
            if (el.closest('.scroll, pre, textarea')) continue;
            out.push(el.tagName + '.' + el.className + ': ' + (el.textContent || '').slice(0, 60));
        }
        return out;
        """,
    )
    assert not sticking_out, sticking_out
    # The culprit frame is readable without scrolling sideways.
    culprit = browser.find_element("css selector", "tr.frame.culprit")
    rect = js(browser, "return arguments[0].getBoundingClientRect().toJSON()", culprit)
    assert rect["left"] >= 0 and rect["right"] <= width
    assert js(browser, "return parseFloat(getComputedStyle(document.body).fontSize)") >= 12
    js(browser, "window.scrollTo(0, 0)")
    keep(artifacts, "report-phone.png", screenshot(browser), capsys)


def test_report_prints_with_the_crashing_thread_whole(browser, null_thread_page, artifacts, capsys):
    open_page(browser, null_thread_page)
    # A reader in dark mode still prints black on white.
    set_media(browser, "print", color_scheme="dark")
    assert js(browser, "return getComputedStyle(document.body).backgroundColor") == "rgb(255, 255, 255)"
    # Folded threads and the verdict's evidence are printed open; the copy-as-Markdown box
    # is left out.
    for details in browser.find_elements("css selector", "details.thread, details.evidence"):
        assert details.get_attribute("open") is None
        assert js(browser, "return arguments[0].querySelector('table, ul').checkVisibility()", details)
    assert not js(browser, "return document.getElementById('markdown').checkVisibility()")
    # Every frame of the crashing thread is on the page: nothing hidden in a scroller.
    scroller = browser.find_element("css selector", "#crashing-thread .scroll")
    assert js(browser, "return arguments[0].scrollWidth <= arguments[0].clientWidth", scroller)
    rows = browser.find_elements("css selector", "#crashing-thread tr.frame")
    assert rows and all(js(browser, "return arguments[0].checkVisibility()", row) for row in rows)

    pdf = base64.b64decode(
        browser.execute_cdp_cmd(
            "Page.printToPDF",
            {"printBackground": True, "paperWidth": 8.27, "paperHeight": 11.69, "preferCSSPageSize": True},
        )["data"]
    )
    assert pdf.startswith(b"%PDF-") and len(pdf) > 5000
    keep(artifacts, "report-print.pdf", pdf, capsys)
    set_media(browser)


def test_names_from_the_core_stay_text_in_the_browser(browser, hostile_page, artifacts, capsys):
    """An executable called `x"><img src=x onerror=alert(1)>` run with <script> arguments."""
    requests = open_page(browser, hostile_page)
    assert requests == [hostile_page.as_uri()]
    assert browser.find_elements("css selector", "img, script, iframe, object, embed") == []
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 — raises unless a script ran
    assert js(browser, "return getComputedStyle(document.body).display") != "none"
    page_text = browser.find_element("css selector", "body").text
    assert HOSTILE_EXE_NAME in page_text  # shown, as text
    core_facts = browser.find_element("css selector", "#core").text
    assert HOSTILE_ARGS[0] in core_facts and HOSTILE_ARGS[1] in core_facts
    keep(artifacts, "report-hostile-names.png", screenshot(browser), capsys)


# --------------------------------------------------------------------------------------------
# The batch index
# --------------------------------------------------------------------------------------------

KNOWN_NULL_STORE = """
[[crash]]
id = "store-result-null"
title = "store_result writes through a NULL slot"
url = "https://example.org/issues/1"
[crash.match]
frames = ['^store_result$']
"""


def _visible_rows(driver) -> list[str]:
    """The crash groups' signatures as a person sees them: shown rows, top to bottom."""
    return js(driver, """
        return [...document.querySelectorAll('#groups + .scroll .g')]
            .filter(e => getComputedStyle(e).display !== 'none')
            .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
            .map(e => e.querySelector('code.signature').textContent);""")


def _choose(driver, select_id: str, label_start: str) -> None:
    """Pick an option the way a keyboard user does: focus the select, arrow down to it."""
    from selenium.webdriver.common.keys import Keys

    select = driver.find_element("id", select_id)
    labels = [o.text for o in select.find_elements("tag name", "option")]
    target = next(i for i, text in enumerate(labels) if text.startswith(label_start))
    current = labels.index(next(o.text for o in select.find_elements("tag name", "option") if o.is_selected()))
    select.send_keys(*([Keys.ARROW_DOWN] * (target - current) if target >= current else [Keys.ARROW_UP] * (current - target)))


def test_batch_index_sorts_and_filters_by_keyboard_without_scripts(browser, cores, tmp_path, artifacts, capsys):
    """A batch over real cores (three crash kinds, one a fleet's known crash): the index loads
    nothing but itself, draws a trend chart per group, and sorts and filters with the keyboard."""
    inputs = tmp_path / "fleet" / "host-a"
    inputs.mkdir(parents=True)
    for name in ("null_thread", "divzero", "double_free"):
        (inputs / f"core.{name}").write_bytes(cores.c_crash(name).core.read_bytes())
    for n, name in enumerate(("core.null_thread", "core.divzero", "core.double_free")):
        os.utime(inputs / name, (1_760_000_000 + n * 86400 * 3,) * 2)  # crashes on three days
    known = tmp_path / "known.toml"
    known.write_text(KNOWN_NULL_STORE)
    out = tmp_path / "out"
    run = run_cli("batch", str(tmp_path / "fleet"), "--out", str(out), "--jobs", "2", "--known", str(known))
    assert run.code == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    page = out / "index.html"

    requests = open_page(browser, page)
    assert requests == [page.as_uri()], "the index must load nothing but itself"
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert js(browser, "return document.scripts.length") == 0
    charts = browser.find_elements("css selector", "svg.trend path")
    assert len(charts) == 3 and all(c.size["height"] > 0 for c in charts)
    keep(artifacts, "batch-index.png", screenshot(browser), capsys)

    by_count = [g["signature"] for g in summary["groups"]]
    assert _visible_rows(browser) == by_count
    # Sort by first seen, newest first: the double-free (the latest mtime) comes first.
    _choose(browser, "sort", "first seen")
    newest = sorted(summary["groups"], key=lambda g: g["first_seen"], reverse=True)
    assert _visible_rows(browser) == [g["signature"] for g in newest]
    # Only the known crashes, then only one fault kind.
    _choose(browser, "filter-state", "known")
    known_group = next(g for g in summary["groups"] if g["known"])
    assert _visible_rows(browser) == [known_group["signature"]]
    assert "store_result writes through a NULL slot" in browser.find_element("css selector", ".g .known-line").text
    _choose(browser, "filter-state", "all")
    _choose(browser, "filter-kind", "divide-by-zero")
    assert _visible_rows(browser) == [g["signature"] for g in summary["groups"] if g["fault_kind"] == "divide-by-zero"]
    keep(artifacts, "batch-index-filtered.png", screenshot(browser), capsys)
