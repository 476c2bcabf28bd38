"""docs/clouds.md cannot go stale (issue 27 item 5): what each shipped prod stack declares for scaling and what its
roles may do is generated from the program's recorded inventory (the mock engine's, as `gpufleet preview` sees it)
into a marked block, and every permission the page names anywhere is one a role of the program grants.

Regenerate after a program change: `.venv/bin/pytest tests/test_clouds_doc.py --update-goldens`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpufleet import plan, registry

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "clouds.md"
BEGIN, END = "<!-- clouds-facts:begin (tests/test_clouds_doc.py --update-goldens) -->", "<!-- clouds-facts:end -->"
SCALING = ("ess/alarm:Alarm", "scalingPolicy:ScalingPolicy", "Scf/function:Function")  # what decides a scale event
ACTION = re.compile(r"\b([a-z]{2,5}:[A-Z][A-Za-z]+)\b")  # `oss:GetObject`, `cos:HeadBucket`


def _stack(cloud: str) -> str:
    return next(p.name[len("Pulumi.") : -len(".yaml")] for p in sorted((ROOT / "stacks").glob(f"Pulumi.{cloud}-*-prod.yaml")))


def _policies(resources: list[dict]) -> dict[str, list[str]]:
    """Role policy resource name -> the actions its document allows (Alibaba RAM `policyDocument`, Tencent CAM
    `document`; Tencent writes `name/<service>:<action>`)."""
    out = {}
    for r in resources:
        doc = r["inputs"].get("policyDocument") or r["inputs"].get("document")
        if r["type"].endswith("/policy:Policy") and isinstance(doc, str):
            statements = json.loads(doc).get("Statement") or json.loads(doc).get("statement") or []
            actions = [a for s in statements for a in (s.get("Action") or s.get("action") or [])]
            out[r["name"]] = [a.removeprefix("name/") for a in actions]
    return out


def _scaling(r: dict) -> str:
    i = r["inputs"]
    said = [i["description"]] if i.get("description") else []
    for e in [i, *(i.get("expressions") or [])]:
        if e.get("metricName") and e.get("comparisonOperator") is not None:
            said.append(f"`{e['metricName']} {e['comparisonOperator']} {float(e['threshold']):g}`")
    return f"`{r['type'].split(':')[1]}` {r['name']}: " + "; ".join(said)


def _custom(resources: list[dict]) -> int:
    return sum(1 for r in resources if r["custom"])


def facts() -> str:
    clouds = list(registry.names())
    inventories = {c: plan.for_stack(_stack(c)).resources for c in clouds}
    rows = [
        "| | " + " | ".join(f"{c} (`{_stack(c)}`)" for c in clouds) + " |",
        "|---|" + "---|" * len(clouds),
        "| resources (as `preview` counts them) | "
        + " | ".join(f"{_custom(inventories[c])} (+{len(inventories[c]) - _custom(inventories[c])} components)" for c in clouds)
        + " |",
        "| scaling (what decides a scale event) | "
        + " | ".join("<br>".join(_scaling(r) for r in inventories[c] if r["type"].endswith(SCALING)) for c in clouds)
        + " |",
        "| role policies: what each allows | "
        + " | ".join(
            "<br>".join(f"{name}: " + ", ".join(f"`{a}`" for a in acts) for name, acts in _policies(inventories[c]).items())
            for c in clouds
        )
        + " |",
    ]
    return "\n".join([BEGIN, *rows, END])


def _block(text: str) -> str:
    return re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, re.S).group(0)


def test_the_generated_block_is_what_the_program_declares(request):
    want = facts()
    text = DOC.read_text()
    if request.config.getoption("--update-goldens"):
        DOC.write_text(text.replace(_block(text), want))
        text = DOC.read_text()
    assert _block(text) == want, "docs/clouds.md is stale: run tests/test_clouds_doc.py with --update-goldens"


@pytest.mark.parametrize("cloud", list(registry.names()))
def test_every_permission_the_page_names_is_granted(cloud):
    """A permission the program no longer grants (Tencent's monitor:PutMonitorData) cannot stay in the prose."""
    granted = {a for acts in _policies(plan.for_stack(_stack(cloud)).resources).values() for a in acts}
    text = DOC.read_text()
    section = text.split(f"(`src/gpufleet/components/{cloud}/`)", 1)[1].split("\n## ", 1)[0]
    named = set(ACTION.findall(section))
    assert named - granted == set(), f"docs/clouds.md names {sorted(named - granted)}, which no {cloud} role grants"
    assert named, f"the {cloud} section names none of its role's permissions"
