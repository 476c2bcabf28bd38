"""Every argument the programs set, across the sweep, against the "Valid values" its installed SDK documents.

A second source next to the rules (which are read from the provider source): where a docstring is stale, the
cloud's rules.DOCSTRING_OVERRIDES says why, with the provider file that validates the argument.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpufleet import contract

from . import docstrings, sweep


def test_recorded_values_are_in_the_sdk_documented_values(monkeypatch):
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-01T00:00:00Z")
    checked, wrong, overridden = set(), {}, set()
    for name, cloud, inv in sweep.inventories():
        overrides = contract.rules_module(cloud).DOCSTRING_OVERRIDES
        for r in inv["resources"]:
            if not r["custom"] or r["type"].startswith("pulumi:"):
                continue
            for key, value in r["inputs"].items():
                arg = contract.snake(key)
                doc = docstrings.documented(r["type"], arg)
                if doc is None:
                    continue
                checked.add((r["type"], arg))
                if docstrings.conforms(value, doc):
                    continue
                if (r["type"], arg) in overrides:
                    overridden.add((r["type"], arg))
                    continue
                wrong.setdefault((r["type"], arg), f"{name}: {value!r} not in {doc}")
    assert wrong == {}
    assert len(checked) >= 40  # the extraction reads the SDKs
    # docs/provider-contract.md says how many arguments have documented values: the count is this test's (issue 27)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "provider-contract.md").read_text()
    said = int(re.search(r"top-level argument set \((\d+) have them", doc).group(1))
    assert said == len(checked), f"docs/provider-contract.md says {said} arguments have SDK-documented values; {len(checked)} do"
    for cloud in ("alicloud", "tencentcloud"):  # an override that no longer overrides anything is stale itself
        stale = set(contract.rules_module(cloud).DOCSTRING_OVERRIDES) - overridden
        assert not stale, stale


def test_extraction_reads_lists_and_ranges():
    assert docstrings.documented("alicloud:ess/scalingRule:ScalingRule", "cooldown") == ("range", (0, 86400))
    kind, values = docstrings.documented("tencentcloud:As/scalingGroup:ScalingGroup", "termination_policies")
    assert kind == "values" and set(values) == {"OLDEST_INSTANCE", "NEWEST_INSTANCE"}
    doc = docstrings.documented("alicloud:ess/alarm:Alarm", "metric_type")
    assert doc and docstrings.conforms("system", doc) and not docstrings.conforms("systems", doc)
    assert not docstrings.conforms(86401, ("range", (0, 86400)))
