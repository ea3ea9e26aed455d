"""distributions.toml read once: import names, preferred builds, accelerator patterns, namespaces."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import DISTRIBUTIONS, DISTRIBUTIONS_FILE


@dataclass(frozen=True)
class Namespace:
    distributions: tuple[str, ...]  # templates with {component} and {cuda}
    components: dict[str, str]  # library stem (name up to ".so") -> component


@dataclass(frozen=True)
class FetchRules:
    import_names: dict[str, tuple[str, ...]]
    prefer_when_loaded: tuple[tuple[str, tuple[str, ...]], ...]  # (library pattern, distributions)
    accelerators: dict[str, tuple[re.Pattern[str], ...]]
    namespaces: dict[str, Namespace]


@cache
def fetch_rules() -> FetchRules:
    data = rulesdata.shipped(DISTRIBUTIONS_FILE, DISTRIBUTIONS)
    return FetchRules(
        import_names={name: tuple(dists) for name, dists in data.get("import_names", {}).items()},
        prefer_when_loaded=tuple((p["library"], tuple(p["distributions"])) for p in data.get("prefer_when_loaded", [])),
        accelerators={name: tuple(re.compile(p) for p in patterns) for name, patterns in data.get("accelerators", {}).items()},
        namespaces={
            name: Namespace(tuple(ns["distributions"]), dict(ns.get("components", {})))
            for name, ns in data.get("namespaces", {}).items()
        },
    )
