"""docs/cost.md's worked examples are generated from the shipped catalog and stacks, and checked here (issue 27 item 4):
a price change in cost/data/ that moves a figure fails this test until the page is regenerated with
`.venv/bin/pytest tests/cost/test_docs_examples.py --update-goldens`.

The worked example's arithmetic is written out from the plan's inputs (prices, hours); each result is recomputed
here from those inputs and must equal what `gpufleet cost commit` prints (its JSON), so the page is both what the
tool says and a check of it by hand."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import yaml

from gpufleet.cost import commitment
from gpufleet.cost.catalog import HOURS_PER_MONTH

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cost.md"
STACK = "alicloud-cn-hangzhou-prod"
BEGIN, END = "<!-- commit-example:begin (tests/cost/test_docs_examples.py --update-goldens) -->", "<!-- commit-example:end -->"
CENT, RATIO = Decimal("0.01"), Decimal("0.0001")


def _m(x: Decimal) -> str:
    """Money as the page writes it: thousands separated, two decimals."""
    return f"{x.quantize(CENT, rounding=ROUND_HALF_UP):,}"


def _pct(x: Decimal) -> str:
    return f"{(x * 100).quantize(CENT, rounding=ROUND_HALF_UP)} %"


def worked_example(p: commitment.Plan) -> str:
    """The worked example's markdown, every result recomputed from the prices and hours it shows."""
    pr, cur = p.prices, p.prices.currency
    assert p.rest == "payg" and pr.monthly is not None and pr.yearly_per_month is not None
    full = pr.payg_hourly * HOURS_PER_MONTH
    be = {"monthly": (pr.monthly / full).quantize(RATIO), "yearly": (pr.yearly_per_month / full).quantize(RATIO)}
    assert be == p.break_even  # the page's division is the tool's
    best = min(be, key=lambda k: be[k])
    sub_price = {"monthly": pr.monthly, "yearly": pr.yearly_per_month}
    rows = [
        "| step | arithmetic | result |",
        "|---|---|---|",
        "| hours a month per node | node *k* runs whenever the schedules ask for at least *k* nodes: "
        + "; ".join(f"{n} node(s) for {h.quantize(CENT)} h" for n, h in p.profile)
        + " | "
        + "; ".join(f"node {n.index}: {n.hours} h" for n in p.nodes)
        + " |",
        f"| a full month pay-as-you-go | {pr.payg_hourly} × {HOURS_PER_MONTH} | {_m(full)} |",
        f"| break-even monthly / yearly | {_m(pr.monthly)} ÷ {_m(full)}; {_m(pr.yearly_per_month)} ÷ {_m(full)} "
        f"| {_pct(be['monthly'])}; {_pct(be['yearly'])} |",
    ]
    total = Decimal(0)
    for n in p.nodes:
        util = (n.hours / HOURS_PER_MONTH).quantize(RATIO)
        assert util == n.utilisation
        if util > be[best]:
            cost, how = sub_price[best].quantize(CENT, rounding=ROUND_HALF_UP), f"{_pct(util)} > {_pct(be[best])}: {best}"
        else:
            hours = sum((h for k, h in p.profile if k >= n.index), Decimal(0))  # unrounded: the page shows 4 decimals
            cost = (hours * pr.payg_hourly).quantize(CENT, rounding=ROUND_HALF_UP)
            how = f"{_pct(util)} ≤ {_pct(be[best])}: pay-as-you-go, {hours.quantize(RATIO)} h × {pr.payg_hourly}"
        assert (cost, n.choice) == (n.cost, best if util > be[best] else "payg"), n
        total += cost
        rows.append(f"| node {n.index} | {how} | {_m(cost)} |")
    assert total == p.monthly_cost
    without = p.monthly_cost_without
    rows.append(
        f"| a month | {' + '.join(_m(n.cost) for n in p.nodes)} (all pay-as-you-go: {_m(without)}) "
        f"| {_m(total)} ({((total - without) / without * 100).quantize(Decimal('0.1')):+} %) |"
    )
    if p.subscribed and p.term == "yearly":
        up = len(p.subscribed) * 12 * sub_price["yearly"]
        assert up.quantize(CENT, rounding=ROUND_HALF_UP) == p.upfront
        rows.append(f"| upfront for the year | {len(p.subscribed)} × 12 × {sub_price['yearly']} | {_m(p.upfront)} |")
    block = json.dumps(p.billing_block).replace('"', "")
    rows.append(f"| spec | what `cost commit` prints | `billing: {block}` |")
    head = (
        f"For `{p.stack}` ({p.instance_type}) and the shipped catalog's prices: {pr.payg_hourly} {cur}/h pay-as-you-go, "
        f"{_m(pr.monthly)} {cur} a month monthly, {_m(pr.yearly_per_month)} {cur} a month yearly (each price's quality "
        f"and source: `gpufleet cost commit --stack {p.stack}`):"
    )
    return "\n".join([BEGIN, head, "", *rows, END])


def _block(text: str) -> str:
    return re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, re.S).group(0)


def test_the_commit_worked_example_is_what_the_shipped_catalog_gives(request):
    want = worked_example(commitment.plan_stack(STACK))
    text = DOC.read_text()
    if request.config.getoption("--update-goldens"):
        DOC.write_text(text.replace(_block(text), want))
        text = DOC.read_text()
    assert _block(text) == want, "docs/cost.md's worked example is stale: run this test with --update-goldens"


def test_the_worked_example_shows_what_cost_commit_prints(capsys, monkeypatch):
    """The page's figures are the command's: every node's cost, the month and the upfront appear in `cost commit`'s
    JSON as in the page (a hard-coded quote would drift from the catalog and fail here)."""
    from gpufleet.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    try:
        main(["cost", "commit", "--stack", STACK, "--json"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    j = json.loads(capsys.readouterr().out)
    block = _block(DOC.read_text())
    for n in j["nodes"]:
        assert f"| node {n['node']} |" in block and f"| {_m(Decimal(n['monthly_cost']))} |" in block
    assert f"| {_m(Decimal(j['monthly_cost']))} (" in block
    assert f"| {_m(Decimal(j['upfront_yearly']))} |" in block
    assert yaml.safe_load(re.search(r"`billing: (\{.*?\})`", block).group(1)) == j["billing"]
