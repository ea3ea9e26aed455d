"""The two Jinja2 environments: HTML (autoescape on) and Markdown (escape-by-default filter).

Templates are loaded from the package's templates/ (coreanalyze.base.resources), so they work
from a wheel as well as from a source tree. In both environments every `{{ value }}` goes
through `finalize` first: None shows as "?", and strings lose control characters and are
length-bounded before they are escaped for the format.

Compiling the templates costs a fifth of a second-long run; the compiled code is kept in the
user cache (per environment and Jinja2 version; a template whose source changed is compiled
again), and a cache that cannot be read or written is simply not used.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from coreanalyze.base.resources import TEMPLATES
from coreanalyze.render.escaping import MarkdownSafe, md_cell_code, md_code, md_fence, md_html_text, md_text
from coreanalyze.render.view import UNKNOWN, basename, clean, hex_addr, one_line


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


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Jinja2's on-disk cache of compiled templates, never a reason for a render to fail."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 — a damaged entry is a miss: the template is compiled
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except Exception:  # noqa: BLE001 — an unwritable cache only costs the compile next time
            pass


def _compiled_templates(kind: str) -> jinja2.BytecodeCache | None:
    from coreanalyze.base.cachedir import cache_dir

    # Separate per environment: the compiled code depends on its settings (autoescape, ...).
    directory = cache_dir() / f"templates-{kind}-jinja{jinja2.__version__}"
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return _CompiledTemplates(str(directory))


@lru_cache(maxsize=None)
def html_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        bytecode_cache=_compiled_templates("html"),
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
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        bytecode_cache=_compiled_templates("markdown"),
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
