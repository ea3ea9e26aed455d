"""The two Jinja2 environments: HTML (autoescape on) and Markdown (escape-by-default filter).

Templates are loaded from the installed package (`coreanalyze/templates/`), so they work
from a wheel as well as from a source tree. In both environments every `{{ value }}` goes
through `finalize` first: None shows as "?", and strings lose control characters and are
length-bounded before they are escaped for the format.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from .escaping import MarkdownSafe, md_cell_code, md_code, md_fence, md_html_text, md_text
from .view import UNKNOWN, basename, clean, hex_addr, one_line


def _html_finalize(value: Any) -> Any:
    if value is None:
        return UNKNOWN
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return clean(value)  # autoescape runs after this
    return value


def _markdown_finalize(value: Any) -> Any:
    if value is None:
        return UNKNOWN
    if isinstance(value, MarkdownSafe):
        return value
    return md_text(value)


def breakable_path(value: Any) -> Markup:
    """A path (or file:line) escaped for HTML, with a line-break opportunity after each "/",
    so that a narrow column wraps it between directories instead of inside a name."""
    if value is None:
        return Markup(UNKNOWN)
    return Markup("/<wbr>").join(escape(part) for part in one_line(value).split("/"))


def _common_filters(env: jinja2.Environment) -> None:
    env.filters["hex"] = hex_addr
    env.filters["basename"] = basename
    env.filters["one_line"] = one_line


@lru_cache(maxsize=None)
def html_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coreanalyze", "templates"),
        autoescape=True,
        finalize=_html_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    _common_filters(env)
    env.filters["path"] = breakable_path
    return env


@lru_cache(maxsize=None)
def markdown_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("coreanalyze", "templates"),
        # HTML autoescaping would be wrong for Markdown; `_markdown_finalize` escapes instead.
        autoescape=False,
        finalize=_markdown_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    _common_filters(env)
    env.filters["md"] = md_text
    env.filters["code"] = md_code
    env.filters["cell"] = md_cell_code
    env.filters["fence"] = md_fence
    env.filters["html_text"] = md_html_text
    return env
