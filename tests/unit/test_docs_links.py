"""The README is a page of links into docs/: every relative link of the README and of docs/*.md
leads to a file that exists, and a link to a section to a heading that exists."""

from __future__ import annotations

import re
from pathlib import Path

from support.paths import REPO

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors: headings lower-cased, punctuation dropped, spaces as dashes."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_every_link_of_the_readme_and_the_docs_leads_somewhere():
    broken = []
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            linked = (page.parent / file).resolve() if file else page
            if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken


def test_the_readme_links_every_page_of_the_docs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    pages = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert {p for p in pages if f"({p}" not in readme} == set()
