"""The GPU exception rules (exception.toml) as typed, compiled data."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import GPU_EXCEPTIONS

RULES_FILE = Path(__file__).resolve().parent / "exception.toml"


@dataclass(frozen=True)
class KernelRule:
    category: str
    pattern: re.Pattern[str]
    description: str


@dataclass(frozen=True)
class ExceptionAdvice:
    exceptions: frozenset[str]
    text: str


@dataclass(frozen=True)
class GpuRules:
    default_category: str
    driver_modules: re.Pattern[str]
    kernels: tuple[KernelRule, ...]
    advice: tuple[ExceptionAdvice, ...]
    missing_enabled: str
    missing_unreadable: str
    missing_disabled: str

    def kernel_rule(self, kernel: str | None) -> KernelRule | None:
        if not kernel:
            return None
        return next((rule for rule in self.kernels if rule.pattern.search(kernel)), None)

    def advice_for(self, exception: str | None) -> list[str]:
        return [entry.text for entry in self.advice if exception in entry.exceptions]


@lru_cache(maxsize=1)
def gpu_rules(path: Path = RULES_FILE) -> GpuRules:
    data = rulesdata.shipped(path, GPU_EXCEPTIONS)
    return GpuRules(
        default_category=data["default_category"],
        driver_modules=re.compile(data["driver_modules"]),
        kernels=tuple(KernelRule(k["category"], re.compile(k["pattern"]), k.get("description", "")) for k in data.get("kernel", [])),
        advice=tuple(ExceptionAdvice(frozenset(a["exceptions"]), a["text"]) for a in data.get("advice", [])),
        missing_enabled=data["missing"]["enabled"],
        missing_unreadable=data["missing"]["unreadable"],
        missing_disabled=data["missing"]["disabled"],
    )
