"""Every TOML file the tool reads goes through one loader (coreanalyze.rulesdata) that checks it
against the declared shape of its kind; what does not fit is one line naming the file, the key
path and what was expected."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.clirun import run_cli

from coreanalyze import rulesdata
from coreanalyze.base.errors import BadInput
from coreanalyze.rulesdata.kinds import CLASSIFY_RULES, PACKAGE, SHIPPED
from coreanalyze.rulesdata.shapes import BOOL, INT, STR, AnyOf, ListOf, Pair, ShapeError, Table, Tables, map_of


def shipped_files() -> list[tuple[Path, str]]:
    return [(path, pattern) for pattern in SHIPPED for path in sorted(PACKAGE.glob(pattern))]


def test_every_shipped_toml_file_has_a_kind_and_fits_it():
    declared = {path for path, _ in shipped_files()}
    on_disk = {p for p in PACKAGE.rglob("*.toml") if "__pycache__" not in p.parts}
    assert on_disk == declared, "a TOML file the package ships has no kind in rulesdata/kinds.py SHIPPED (or one is gone)"
    for path, pattern in shipped_files():
        assert rulesdata.shipped(path, SHIPPED[pattern])


def test_no_module_parses_toml_by_itself():
    """tomlfile is the parser; only the loader calls it."""
    allowed = {PACKAGE / "base" / "tomlfile.py", PACKAGE / "rulesdata" / "__init__.py"}
    callers = []
    for path in PACKAGE.rglob("*.py"):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("tomlfile", "tomllib", "tomli")
            imported = isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                "toml" in name for name in [getattr(node, "module", None) or "", *(a.name for a in node.names)]
            )
            if named or imported:
                callers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert callers == []


@pytest.mark.parametrize(
    "shape, value, message",
    [
        (Table({"a": INT}), {"b": 1}, "unknown key 'b' (expected one of: a)"),
        (Table({"a": INT}, required=("a",)), {}, "missing key 'a'"),
        (Table({"a": INT}), {"a": True}, "a: expected an integer, got a boolean (true)"),
        (Table({"a": BOOL}), {"a": 0}, "a: expected true or false, got an integer (0)"),
        (Table({"a": ListOf(STR)}), {"a": ["x", 2]}, "a[2]: expected a string, got an integer (2)"),
        (Table({"a": ListOf(STR, single=True)}), {"a": 2}, "a: expected a string or an array of strings, got an integer (2)"),
        (Table({"t": Tables(Table({"name": STR, "n": INT}))}), {"t": [{"name": "ok"}, {"name": "x", "n": "1"}]}, "t[2] ('x').n: expected an integer, got a string ('1')"),
        (Table({"t": Tables(Table({"n": INT}))}), {"t": {"n": 1}}, "t: expected an array of tables, got a table"),
        (map_of(Pair((STR, INT))), {"7": ["int8", "1"]}, "7[2]: expected an integer, got a string ('1')"),
        (map_of(AnyOf((INT, map_of(INT)))), {"g": {"x": "y"}}, "g: expected an integer or a table, got a table"),
        (Table({"a b": Table({"c": INT})}), {"a b": {"c": 1.5}}, "'a b'.c: expected an integer, got a float (1.5)"),
    ],
)
def test_a_mismatch_names_the_key_path_and_what_was_expected(shape, value, message):
    with pytest.raises(ShapeError) as info:
        shape.check(value)
    assert str(info.value) == message


def test_what_fits_passes():
    shape = Table({"a": ListOf(STR, single=True), "t": Tables(Table({"n": INT}, required=("n",))), "m": map_of(BOOL)})
    shape.check({"a": "x", "t": [{"n": 1}], "m": {"anything": True}})
    shape.check({"a": ["x", "y"], "t": []})


def test_a_users_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text("[[rule]]\nname = 'mine'\ncategory = 'xla'\nfunction = 'f'\nwindow = '3'\n")
    with pytest.raises(BadInput) as info:
        rulesdata.load(path, CLASSIFY_RULES)
    assert str(info.value) == f"rules file {path}: rule[1] ('mine').window: expected an integer, got a string ('3')"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(BadInput, match="not UTF-8 text"):
        rulesdata.load(path, CLASSIFY_RULES)
    with pytest.raises(BadInput, match="larger than 0 MiB"):
        rulesdata.load(path, CLASSIFY_RULES, max_bytes=1)


def pasted_trace(tmp_path: Path) -> Path:
    """`triage` needs no core: the same checks as every command that takes --rules or --known."""
    text = tmp_path / "bt.txt"
    text.write_text("Program received signal SIGSEGV, Segmentation fault.\n#0  0x0000000000401136 in store_result ()\n")
    return text


def test_a_bad_rules_file_through_the_cli_is_one_line_exit_2(tmp_path):
    text = pasted_trace(tmp_path)
    rules = tmp_path / "team.toml"
    rules.write_text("[[advise]]\ntext = 'typo in the table name'\n")
    run = run_cli("triage", str(text), "--rules", str(rules))
    assert run.code == 2
    assert run.stderr == f"coreanalyze: error: rules file {rules}: unknown key 'advise' (expected one of: " + ", ".join(CLASSIFY_RULES.shape.fields) + ")\n"


def test_a_bad_known_file_through_the_cli_is_one_line_exit_2(tmp_path):
    text = pasted_trace(tmp_path)
    known = tmp_path / "ours.toml"
    known.write_text("[[crash]]\nid = 'ours'\ntitle = 'ours'\n[crash.match]\nframes = 'store_result'\nfault_kinds = ['null-deref']\n")
    run = run_cli("triage", str(text), "--known", str(known))
    assert run.code == 2 and run.stdout == ""
    assert run.stderr == f"coreanalyze: error: --known {known}: crash[1] ('ours').match: unknown key 'fault_kinds' (expected one of: signature, abort_message, summary, gpu_exception, frames, fault_kind, ops, before_fix)\n"
