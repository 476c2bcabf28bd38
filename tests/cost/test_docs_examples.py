"""The docs' worked examples are the shipped catalog's (issue 27 item 4): docs/cost.md's commit example is generated here,
docs/cost-reports.md's printed examples and its cost tokens example by hand are checked against the commands. A price
change in cost/data/ that moves a figure fails here: regenerate the commit example with
`.venv/bin/pytest tests/cost/test_docs_examples.py --update-goldens`, edit the other pages' figures as the failure says.

The worked example's arithmetic is written out from the plan's inputs (prices, hours); each result is recomputed
here from those inputs and must equal what `gpufleet cost commit` prints (its JSON), so the page is both what the
tool says and a check of it by hand."""

from __future__ import annotations

import json
import re
import shlex
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
import yaml

from gpufleet.cost.catalog import HOURS_PER_MONTH
from gpufleet.finance import commitment

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


# --- docs/cost-reports.md: each printed example is what the command prints now ---------------------------------------

REPORTS = ROOT / "docs" / "cost-reports.md"


def printed_examples() -> list[tuple[str, list[str]]]:
    """(command, the lines the page shows it printing) for each ```text block that follows the command: a `$ gpufleet`
    line inside the block, or the first `gpufleet` line of the ```bash block just before it (docs/cost-reports.md);
    in docs/cost.md only blocks with their own `$ gpufleet` line. `...` lines are elisions."""
    out = _printed(REPORTS.read_text(), own_only=False)
    return out + _printed(DOC.read_text(), own_only=True)


def _printed(text: str, own_only: bool) -> list[tuple[str, list[str]]]:
    out = []
    for m in re.finditer(r"```text\n(.*?)```", text, re.S):
        lines = m.group(1).splitlines()
        own = [l[2:] for l in lines if l.startswith("$ gpufleet ")]
        if own:
            command = own[0]
        elif own_only:
            continue
        else:
            before = re.findall(r"```bash\n(.*?)```", text[: m.start()], re.S)
            command = next(l.split("  #")[0].strip() for l in before[-1].splitlines() if l.startswith("gpufleet "))
        shown = [l for l in lines if not l.startswith("$ ") and l.strip() not in ("...", "…") and "…" not in l]
        out.append((command, shown))
    return out


@pytest.mark.parametrize(("command", "shown"), printed_examples(), ids=[c for c, _ in printed_examples()])
def test_cost_reports_examples_are_what_the_commands_print(command, shown, capsys, monkeypatch):
    from gpufleet.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(ROOT)
    try:
        main(shlex.split(command)[1:])
    except SystemExit as exc:
        assert exc.code in (0, None, 1)
    out = capsys.readouterr().out
    rows = {l.rstrip() for l in out.splitlines()}
    prose = " ".join(out.split())  # a sentence may wrap elsewhere on the page than in the terminal

    def printed(line: str) -> bool:
        if line.lstrip().startswith(("┃", "│")):  # a table row: as printed, column widths and all
            return line.rstrip() in rows
        return all(" ".join(part.split()) in prose for part in line.split("..."))  # `...` elides part of a line

    stale = [l for l in shown if not printed(l)]
    assert stale == [], f"docs/cost-reports.md shows lines `{command}` no longer prints"


def test_the_tokens_example_by_hand_is_what_cost_tokens_computes(capsys):
    """docs/cost-reports.md works `cost tokens` out by hand; each bold result is the command's (JSON), so a catalog
    change that moves them fails here."""
    from gpufleet.cli import main

    src = ROOT / "examples" / "loadtest-example.json"
    try:
        main(["cost", "tokens", "-s", STACK, "--from-loadtest", str(src), "--utilization", "0.5", "--peak-qps", "40", "--json"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    j = json.loads(capsys.readouterr().out)
    payg = next(b for b in j["billing"] if b["billing"] == "payg")
    half = next(p for p in payg["points"] if p["label"] == "50%")
    text = " ".join(REPORTS.read_text().split("By hand, pay-as-you-go:", 1)[1].split("\n## ", 1)[0].split())
    assert f"= **{payg['node_monthly']} CNY**" in text
    million = Decimal(half["per_million_output_tokens"]).quantize(CENT, rounding=ROUND_HALF_UP)
    assert f"**{million} CNY per million output tokens**" in text
    assert f"**{half['per_request']} CNY per request**" in text
    nodes, monthly = j["peak"]["nodes"], Decimal(j["peak"]["monthly"]["payg"])
    assert f"= {nodes} nodes: {nodes} x {payg['node_monthly']} = {_m(monthly)} CNY a month" in text
    for line in payg["lines"]:  # each part of the node-month, e.g. "(6956.90)"
        assert f"({line.rsplit('= ', 1)[1]})" in text, line
