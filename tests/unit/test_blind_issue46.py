"""Issue 46's blind round (tests/data/blind/issue46.toml): 62 crash texts from public threads,
labelled before the tool ran and split by the parity of the SHA-256 of their source URL before
any verdict was seen. The rules and the name index were tuned on the even half only.

Measured before the name index: tune half (25) category 8, fault kind 17, 5 refused; held-out
half (37) category 19, fault kind 29, 6 refused. After it (and the errors-before-a-crash evidence):
tune 19, 24, none refused; held-out 25 (68%), 34 (92%), 2 refused. After a second pass on the tune
half's misses by general causes (tests/unit/test_triage_general_causes.py): tune 24, 25, none
refused; held-out 26 (70%), 34 (92%), 2 refused. These tests hold the numbers
reached so that a change that loses them is seen; the held-out half is the number that counts.
Texts that state an error (`states_error`): 2 of 3 (tune) and 4 of 5 (held-out) got their category
before the second pass, 3 of 3 and 5 of 5 after it.
"""

from __future__ import annotations

from tests.support import blindsets

REPORTS = blindsets.load("issue46.toml")
TUNE = [r for r in REPORTS if blindsets.half(r["source"]) == "tune"]
HELD_OUT = [r for r in REPORTS if blindsets.half(r["source"]) == "held-out"]


def test_the_split_is_the_one_fixed_before_the_verdicts():
    assert (len(TUNE), len(HELD_OUT)) == (25, 37)


def test_the_tuning_half_keeps_its_numbers():
    category, kind, refused = blindsets.score(TUNE)
    assert (category, kind) >= (TUNE_CATEGORY, TUNE_KIND) and refused <= TUNE_REFUSED, (category, kind, refused)


def test_the_held_out_half_keeps_its_numbers():
    category, kind, refused = blindsets.score(HELD_OUT)
    assert (category, kind) >= (HELD_CATEGORY, HELD_KIND) and refused <= HELD_REFUSED, (category, kind, refused)


TUNE_CATEGORY, TUNE_KIND, TUNE_REFUSED = 24, 25, 0
HELD_CATEGORY, HELD_KIND, HELD_REFUSED = 26, 34, 2
