"""docs/provider-contract.md's counts of rules are the code's (issue 27 item 5): each cloud's row in "Where the rules
are" says how many rules its rules.py holds, how many cite the pinned API reference (`<package>==<version> <member>`)
and how many arguments `NO_CONSTRAINT` lists. (The spec-coverage block below it is written by tests/system/coverage.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpufleet import contract, registry

DOC = Path(__file__).resolve().parents[2] / "docs" / "provider-contract.md"
PINNED = re.compile(r"==\d")  # a rule read from a pinned API reference cites `<package>==<version> <member>`


def counts(cloud: str) -> dict[str, int]:
    m = contract.rules_module(cloud)
    return {
        "rules": len(m.RULES),
        "pinned": sum(1 for r in m.RULES if PINNED.search(r.source)),
        "no_constraint": sum(len(args) for _, args in m.NO_CONSTRAINT.values()),
    }


def said(cloud: str) -> dict[str, int]:
    row = next(l for l in DOC.read_text().splitlines() if l.startswith(f"| `src/gpufleet/components/{cloud}/rules.py` |"))
    find = lambda pattern: int(re.search(pattern, row).group(1))  # noqa: E731
    return {
        "rules": find(r"\| (\d+) rules"),
        "pinned": find(r"(\d+) of them the (?:pinned )?"),
        "no_constraint": find(r"`NO_CONSTRAINT` for (?:the )?(\d+) arguments"),
    }


@pytest.mark.parametrize("cloud", list(registry.names()))
def test_the_rule_counts_the_page_gives_are_the_codes(cloud):
    assert said(cloud) == counts(cloud), f"docs/provider-contract.md's {cloud} row is stale: write the code's counts"


def test_the_sweep_size_the_page_gives_is_the_sweeps():
    from . import sweep

    said = int(re.search(r"all pairs\s+\((\d+) variants", DOC.read_text()).group(1))
    assert said == len(sweep.all_pairs(sweep.dimensions()))
