"""The docs' reaction-time claims come from the simulation and are checked against it: README's "about 3 minutes" on
Alibaba, docs/scaling.md's worst case on Alibaba and one timer period on Tencent."""

from __future__ import annotations

import re
from pathlib import Path

from simfixtures import START

from gpufleet import plan
from gpufleet.simulate import check, run

ROOT = Path(__file__).resolve().parents[2]


def _first_scale_out_after_step(stack: str, cap) -> tuple[float, float]:
    p = plan.for_stack(stack)
    b = run.behaviour(p.fleet, p.resources)
    r = check.step_result(b, cap, START)
    first = next(e.time_s for e in r.events if e.kind == "out" and e.time_s >= check.STEP_AT_S)
    return first - check.STEP_AT_S, b.reaction_s


def test_readme_about_three_minutes_on_alibaba(cap):
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"on Alibaba[^.]*?\(about (\d+) minutes\)", readme)
    assert m, "README no longer states Alibaba's reaction time"
    took, declared = _first_scale_out_after_step("alicloud-cn-hangzhou-prod", cap)
    assert round(declared / 60) == int(m.group(1))  # the worst case the simulation reads from the declared alarms
    assert took <= declared


def test_scaling_doc_tencent_one_timer_period(cap):
    doc = (ROOT / "docs" / "scaling.md").read_text()
    m = re.search(r"\*\*Reaction\*\*: one timer period, (\d+) s", doc)
    assert m
    took, declared = _first_scale_out_after_step("tencentcloud-ap-guangzhou-prod", cap)
    assert declared == float(m.group(1)) and took <= declared


def test_scaling_doc_alibaba_worst_case_matches_the_simulation(cap):
    doc = (ROOT / "docs" / "scaling.md").read_text()
    m = re.search(r"at most (\d+) s from a queue to the scale-out", doc)
    assert m
    _, declared = _first_scale_out_after_step("alicloud-cn-hangzhou-prod", cap)
    assert float(m.group(1)) == declared
