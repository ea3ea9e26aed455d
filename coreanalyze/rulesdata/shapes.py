"""Small typed declarations of what a TOML file may hold, and the check of a parsed file against
one. A shape says the keys a table may have, which of them it must have, and the type of every
value; the loaders that turn a file into rules then only decide what the values mean (a regex
that compiles, a category that exists), never whether a key is spelled right.

The check walks the parsed document once (a few thousand values for the largest file, well under
a millisecond); the first mismatch raises ShapeError with the key path and what was expected.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Mapping, Union


class ShapeError(ValueError):
    """The first place a document differs from its shape: where (keys and 1-based array
    positions, outermost first) and what was expected there."""

    def __init__(self, message: str, where: tuple[str, ...] = ()):
        self.message = message
        self.where = where
        super().__init__(f"{self.path}: {message}" if where else message)

    @property
    def path(self) -> str:
        """The key path as a reader of the file would write it: rule[3].priority."""
        text = ""
        for part in self.where:
            text += part if part.startswith("[") or not text else "." + part
        return text

    def inside(self, part: str) -> ShapeError:
        """The same error seen from the enclosing table or array (the path grows outwards, so
        a document that fits costs no path at all)."""
        return ShapeError(self.message, (part, *self.where))


# The TOML names of the values a document may hold, for messages (bool before int: True is one).
TOML_TYPES = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
    ((datetime.date, datetime.time), "a date or time"),
)


def toml_type(value: Any) -> str:
    return next((words for kind, words in TOML_TYPES if isinstance(value, kind)), type(value).__name__)


@dataclass(frozen=True)
class Scalar:
    """A string, integer, float or boolean (TOML's booleans are never integers here)."""

    kind: type
    words: str  # what a message calls it

    def check(self, value: Any) -> None:
        if type(value) is self.kind or (self.kind is float and type(value) is int):  # 1 is a number too
            return
        raise ShapeError(f"expected {self.words}, got {_got(value)}")

    def describe(self) -> str:
        return self.words


STR = Scalar(str, "a string")
INT = Scalar(int, "an integer")
FLOAT = Scalar(float, "a number")
BOOL = Scalar(bool, "true or false")


@dataclass(frozen=True)
class ListOf:
    """An array of `item`s; with `single`, one item alone stands for a list of one."""

    item: Shape
    single: bool = False

    def check(self, value: Any) -> None:
        if type(value) is not list:
            if self.single and _fits(self.item, value):
                return
            raise ShapeError(f"expected {self.describe()}, got {_got(value)}")
        if isinstance(self.item, Scalar) and all(type(v) is self.item.kind for v in value):
            return  # the common case, at C speed
        for i, item in enumerate(value):
            try:
                self.item.check(item)
            except ShapeError as e:
                raise e.inside(f"[{i + 1}]") from None

    def describe(self) -> str:
        words = f"an array of {_plural(self.item.describe())}"
        return f"{self.item.describe()} or {words}" if self.single else words


@dataclass(frozen=True)
class Pair:
    """A short array whose items have fixed shapes: `["float32", 4]`."""

    items: tuple[Shape, ...]

    def check(self, value: Any) -> None:
        if type(value) is not list or len(value) != len(self.items):
            raise ShapeError(f"expected {self.describe()}, got {_got(value)}")
        for i, (item, shape) in enumerate(zip(value, self.items)):
            try:
                shape.check(item)
            except ShapeError as e:
                raise e.inside(f"[{i + 1}]") from None

    def describe(self) -> str:
        return "an array [" + ", ".join(s.describe() for s in self.items) + "]"


@dataclass(frozen=True)
class AnyOf:
    """One of several shapes (an offset or a group of offsets)."""

    options: tuple[Shape, ...]

    def check(self, value: Any) -> None:
        if not any(_fits(option, value) for option in self.options):
            raise ShapeError(f"expected {self.describe()}, got {_got(value)}")

    def describe(self) -> str:
        return " or ".join(o.describe() for o in self.options)


@dataclass(frozen=True)
class Table:
    """A table with the named `fields` (`required` ones among them); `other` is the shape of any
    further key's value (a table used as a map: package -> version), None when there is none."""

    fields: Mapping[str, Shape] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    other: Shape | None = None

    def check(self, value: Any) -> None:
        if type(value) is not dict:
            raise ShapeError(f"expected a table, got {_got(value)}")
        for key in self.required:
            if key not in value:
                raise ShapeError(f"missing key {key!r}")
        for key, item in value.items():
            shape = self.fields.get(key, self.other)
            if shape is None:
                raise ShapeError(f"unknown key {key!r} (expected one of: {', '.join(self.fields)})")
            try:
                shape.check(item)
            except ShapeError as e:
                raise e.inside(_key(key)) from None

    def describe(self) -> str:
        return "a table"


@dataclass(frozen=True)
class Tables:
    """An array of tables, `[[name]]`: each item is checked against `table`; an item that has a
    name (or id) is named by it in a message too, as its author knows it."""

    table: Table

    def check(self, value: Any) -> None:
        if type(value) is not list:
            raise ShapeError(f"expected an array of tables, got {_got(value)}")
        for i, item in enumerate(value):
            try:
                self.table.check(item)
            except ShapeError as e:
                name = (item.get("name") or item.get("id")) if isinstance(item, dict) else None
                raise e.inside(f"[{i + 1}]" + (f" ({name!r})" if isinstance(name, str) else "")) from None

    def describe(self) -> str:
        return "an array of tables"


Shape = Union[Scalar, ListOf, Pair, AnyOf, Table, Tables]


def map_of(value: Shape) -> Table:
    """A table whose keys are names the file chooses, each holding a `value`."""
    return Table(other=value)


def _got(value: Any) -> str:
    """What was found instead: its type, and a short value as written."""
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"  # as TOML writes it
    shown = repr(value) if isinstance(value, (str, int, float)) else ""
    return f"{toml_type(value)} ({shown})" if shown and len(shown) <= 40 else toml_type(value)


def _fits(shape: Shape, value: Any) -> bool:
    try:
        shape.check(value)
    except ShapeError:
        return False
    return True


def _key(key: str) -> str:
    """A key as TOML would need it written: bare when it can be, else quoted."""
    return key if key and all(c.isalnum() or c in "_-" for c in key) else repr(key)


def _plural(words: str) -> str:
    for article in ("an ", "a "):
        if words.startswith(article):
            words = words[len(article) :]
            break
    if words == "true or false":
        return "booleans"
    return words if words.endswith("s") else words + "s"
