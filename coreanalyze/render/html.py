"""The report as one self-contained HTML page (templates/report.html.j2).

No script, no external resource, inline CSS only; the Content-Security-Policy below makes a
browser refuse anything else even if some text from the core slipped through unescaped.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from coreanalyze.base.model import Report
from coreanalyze.render import markdown
from coreanalyze.render.templating import html_environment
from coreanalyze.render.view import build_view

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)


def render(report: Report) -> str:
    view = build_view(report)
    template = html_environment().get_template("report.html.j2")
    return template.render(
        v=view,
        csp=Markup(CONTENT_SECURITY_POLICY),  # a constant of ours, not data
        # Escaped here as a whole (Markup): the template's per-value length bound is for
        # fields, not for this full document.
        markdown=escape(markdown.render(report)),
    )
