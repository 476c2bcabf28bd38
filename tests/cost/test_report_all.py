"""`cost report --all`: every shipped stack priced once and grouped by its spec's tags; shared costs (components
marked shared) counted once across stacks; a stack that cannot be priced makes the total a lower bound."""

import dataclasses
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from gpufleet.cost import allstacks
from gpufleet.cost.estimate import Line

from gpufleet import plan

ROOT = Path(__file__).resolve().parents[2]


def cli(*args):
    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "100"},
    )


def shipped_tags() -> dict[str, dict]:
    return {
        p.name[len("Pulumi.") : -len(".yaml")]: yaml.safe_load(p.read_text())["config"]["gpufleet:fleet"].get("tags", {})
        for p in sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    }


def test_every_shipped_stack_once_grouped_by_its_tag():
    r = cli("cost", "report", "--all", "--by", "cost-center", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    tags = shipped_tags()
    expect: dict[str, list[str]] = {}
    for stack, t in tags.items():
        expect.setdefault(t.get("cost-center", "untagged"), []).append(stack)
    assert {g["name"]: sorted(g["stacks"]) for g in j["groups"]} == {k: sorted(v) for k, v in expect.items()}
    assert sorted(j["total"]["stacks"]) == sorted(tags)
    own = {s: plan.stack_estimate(s)[1] for s in tags}
    shared = Decimal(j["shared"]["monthly_total"])
    # without shared lines the total is the sum of the stacks' own estimates; with them, less the repeats
    assert Decimal(j["total"]["monthly_total"]) <= sum(e.monthly_total for e in own.values()) + shared
    if not j["shared"]["stacks"]:
        assert Decimal(j["total"]["monthly_total"]) == sum(e.monthly_total for e in own.values())
    assert j["total"]["complete"] == all(not e.unpriced for e in own.values())
    table = cli("cost", "report", "--all")
    assert table.returncode == 0 and "total" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 100


@dataclasses.dataclass(frozen=True)
class SharedLine(Line):
    shared: bool = True


def kms(price: str) -> SharedLine:
    return SharedLine(
        "alicloud:kms/instance:Instance", "kms", "KMS instance", "month", Decimal(1), Decimal(price), Decimal(price),
        "other", "official", "kms/instance", "any", "https://example.invalid/source", "2026-01-01",
    )  # fmt: skip


@pytest.fixture
def prod():
    return plan.stack_estimate("alicloud-cn-hangzhou-prod")[1]


def test_shared_costs_are_counted_once_with_a_note(prod):
    a = dataclasses.replace(prod, stack="a", lines=[*prod.lines, kms("1000")])
    b = dataclasses.replace(prod, stack="b", lines=[*prod.lines, kms("1000")])
    c = dataclasses.replace(prod, stack="c", lines=list(prod.lines))
    r = allstacks.report(
        [
            allstacks.StackCost("a", {"team": "search"}, a),
            allstacks.StackCost("b", {"team": "chat"}, b),
            allstacks.StackCost("c", {}, c),
        ],
        "team",
    )
    assert [g.name for g in r.groups] == ["chat", "search", "untagged"]
    assert all(g.monthly == prod.monthly_total for g in r.groups)  # the shared line left both groups
    assert r.shared.monthly == Decimal(1000) and r.shared.stacks == ["a", "b"]
    assert r.total.monthly == 3 * prod.monthly_total + 1000
    assert any("KMS instance (alicloud cn-hangzhou) is declared by a, b and counted once" in n for n in r.notes)
    assert any(n.startswith("untagged: c") for n in r.notes)
    rows = allstacks.as_csv(r).splitlines()
    assert rows[-2].startswith("shared,shared (counted once),a b,CNY,1000.00") and rows[-1].startswith("total,total,")


def test_a_stack_that_cannot_be_priced_is_named_and_the_total_is_a_lower_bound(prod):
    r = allstacks.report(
        [allstacks.StackCost("ok", {"team": "x"}, prod), allstacks.StackCost("broken", {}, None, "stacks/x: bad")], "team"
    )
    assert not r.total.complete and r.total.total_text().startswith(">= ") and r.total.unpriced_stacks == 1
    assert any("broken: not priced (stacks/x: bad)" in n for n in r.notes)
    assert allstacks.as_json(r)["total"]["complete"] is False


def test_bad_input_exits_2():
    r = cli("cost", "report", "--by", "owner")
    assert r.returncode == 2 and "--by" in r.stderr and "--all" in r.stderr and "Traceback" not in r.stderr
    r = cli("cost", "report", "--all", "--format", "xlsx")
    assert r.returncode == 2 and "--format" in r.stderr
