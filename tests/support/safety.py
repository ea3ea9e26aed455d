"""What a safe report looks like: well-formed self-contained HTML with a strict CSP, and
Markdown that renders (as GitHub would) to no markup that came from the data."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from support.require import require

# --------------------------------------------------------------------------------------------
# HTML checks
# --------------------------------------------------------------------------------------------

VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Every tag the report template uses; anything else came from data.
HTML_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "footer", "section", "h1", "h2", "p", "span",
    "code", "dl", "dt", "dd", "div", "a", "strong", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "pre",
    "details", "summary", "textarea", "wbr",
}


class StructureChecker(HTMLParser):
    """Checks tags balance (void elements aside) and collects what the tests look at."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, set[str]]] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text_by_class: dict[str, list[str]] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag in VOID_ELEMENTS:
            return
        classes = set((attributes.get("class") or "").split())
        self.stack.append((tag, classes))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID_ELEMENTS:
            self.errors.append(f"self-closing non-void <{tag}/>")

    def handle_endtag(self, tag):
        if not self.stack:
            self.errors.append(f"</{tag}> with nothing open")
            return
        open_tag, _ = self.stack.pop()
        if open_tag != tag:
            self.errors.append(f"</{tag}> closes <{open_tag}>")

    def handle_data(self, data):
        self.text.append(data)
        for _, classes in self.stack:
            for c in classes:
                self.text_by_class.setdefault(c, []).append(data)

    def close(self):
        super().close()
        if self.stack:
            self.errors.append(f"unclosed: {[t for t, _ in self.stack]}")


def parse_html(html: str) -> StructureChecker:
    checker = StructureChecker()
    checker.feed(html)
    checker.close()
    assert not checker.errors, checker.errors[:10]
    return checker


def class_text(checker: StructureChecker, cls: str) -> str:
    return "".join(checker.text_by_class.get(cls, []))


def assert_safe_html(html: str) -> StructureChecker:
    """Well-formed, self-contained, and no markup came from data."""
    doc = parse_html(html)
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    # Self-contained: nothing is loaded from anywhere. A web address may be named in the text
    # (escaped: the ready-to-paste Markdown names TensorFlow's issue tracker), never in markup.
    styles = "".join(re.findall(r"<style[^>]*>(.*?)</style>", html, flags=re.S | re.I))
    assert "http://" not in styles and "https://" not in styles
    assert "url(" not in html.lower(), "no CSS resource may be loaded"
    unknown = {tag for tag, _ in doc.tags} - HTML_TAGS
    assert not unknown, f"tags that came from data: {unknown}"
    for tag, attrs in doc.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert "http://" not in (value or "") and "https://" not in (value or ""), (tag, name, value)
            if name in ("src", "href", "action", "formaction", "srcset", "poster", "data", "xlink:href"):
                assert (value or "").startswith("#"), f"<{tag} {name}={value!r}> points outside the page"
    csp = [a.get("content") or "" for t, a in doc.tags if t == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(csp) == 1
    policy = {d.strip().split()[0]: d.strip() for d in csp[0].split(";") if d.strip()}
    assert policy["default-src"] == "default-src 'none'"
    assert policy["style-src"] == "style-src 'unsafe-inline'"
    assert policy["img-src"] == "img-src data:"
    assert "script-src" not in policy
    assert any(t == "meta" and a.get("name") == "viewport" for t, a in doc.tags)
    return doc


# --------------------------------------------------------------------------------------------
# Markdown checks: render it as GitHub would (CommonMark + tables, raw HTML allowed) and look
# at the HTML that results.
# --------------------------------------------------------------------------------------------

MARKDOWN_TAGS = {"h3", "h4", "p", "strong", "em", "code", "pre", "ul", "li", "details", "summary",
                 "table", "thead", "tbody", "tr", "th", "td", "hr"}


def markdown_to_html(text: str) -> str:
    MarkdownIt = require(module="markdown_it", what="markdown-it-py (the `test` extra)").MarkdownIt
    return MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough").render(text)


def assert_safe_markdown(text: str) -> StructureChecker:
    html = markdown_to_html(text)
    doc = StructureChecker()
    doc.feed(html)
    doc.close()
    assert not doc.errors, doc.errors[:10]
    tags = {tag for tag, _ in doc.tags}
    assert tags <= MARKDOWN_TAGS, f"markup that came from data: {tags - MARKDOWN_TAGS}"
    for tag, attrs in doc.tags:
        for name, value in attrs.items():
            assert name == "class" and tag == "code" and value == "language-text", (tag, name, value)
    assert "<script" not in html and "<img" not in html and "<a " not in html
    return doc
