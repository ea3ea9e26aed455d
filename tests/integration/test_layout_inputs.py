"""The name index's recorded inputs are those of the TensorFlow wheel setup.sh installs: the
wheel is the test extras', so this lives with the tests that need them (the unit tests also run
in environments without TensorFlow: tests/integration/test_interpreters.py)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from support.require import missing

from coreanalyze.classify import layoutgen


def _installed_tensorflow() -> Path:
    spec = importlib.util.find_spec("tensorflow")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        missing("tensorflow (setup.sh installs it)")
    return Path(spec.submodule_search_locations[0])


def test_the_recorded_inputs_are_the_installed_wheels():
    """The headers, libraries and TFLite builtins recorded are those of the wheel setup.sh installs."""
    root = _installed_tensorflow()
    inputs = layoutgen.load_inputs()
    recorded = inputs["provenance"]["tensorflow"]
    metadata = next(root.parent.glob(f"{recorded['distribution'].replace('-', '_')}-*.dist-info/METADATA"), None)
    if metadata is None or f"Version: {recorded['version']}\n" not in metadata.read_text(encoding="utf-8"):
        missing(f"{recorded['distribution']} {recorded['version']}, the wheel the index was made from")
    include = root / "include"
    headers = sorted(str(p.relative_to(include)) for p in include.rglob("*") if p.is_file())
    sha = hashlib.sha256("\n".join(headers).encode()).hexdigest()
    assert sha == inputs["provenance"]["inputs"]["headers"]["sha256"] == hashlib.sha256("\n".join(inputs["headers"]).encode()).hexdigest()
    libraries = {str(p.relative_to(root.parent)) for p in root.rglob("*.so*") if p.is_file()}
    assert sorted(libraries - set(inputs["libraries"]))[:5] == []
