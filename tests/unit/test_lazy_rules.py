"""The built-in rules' patterns are compiled when first used (coreanalyze.classify.lazyregex):
every one of them must compile, and a user's file is still checked when it is loaded."""

from __future__ import annotations

import dataclasses
import pickle
import re

import pytest

from coreanalyze.base.errors import BadInput
from coreanalyze.classify.lazyregex import LazyPattern
from coreanalyze.classify.rules import default_rules, load_rules


def _patterns(value, seen=None):
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, LazyPattern):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _patterns(getattr(value, f.name), seen)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _patterns(item, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _patterns(item, seen)


def test_every_built_in_pattern_compiles():
    patterns = list(_patterns(default_rules()))
    assert len(patterns) > 300  # the frame, message, line and skip rules
    for pattern in patterns:
        assert isinstance(pattern.compiled(), re.Pattern), pattern.pattern


def test_a_lazy_pattern_behaves_as_the_compiled_one():
    lazy = LazyPattern(r"tensorflow::(\w+)Kernel")
    text = "tensorflow::OpKernel::Compute"
    assert lazy.search(text).group(1) == re.compile(lazy.pattern).search(text).group(1)
    assert lazy.match("x") is None and lazy.fullmatch(text) is None
    assert [m.group(0) for m in lazy.finditer(text)] == ["tensorflow::OpKernel"]
    assert lazy == LazyPattern(lazy.pattern) and lazy == re.compile(lazy.pattern)
    assert pickle.loads(pickle.dumps(lazy)).search(text)


def test_a_users_bad_regex_is_reported_when_the_file_loads(tmp_path):
    rules = tmp_path / "mine.toml"
    rules.write_text('[[rule]]\nname = "mine"\ncategory = "allocator"\nfunction = "(unclosed"\n')
    with pytest.raises(BadInput, match="bad regex"):
        load_rules([rules])
