"""cost compare ranks options only where the order is certain; the table fits 100 columns with every total in full."""

import io
import json
import os
from decimal import Decimal

import pytest
from rich.console import Console

from gpufleet.cost.estimate import Estimate, Line
from gpufleet.finance import compare, report
from gpufleet.finance.compare import Option


def line(cost, key="instance/x", low=None, high=None, quantity="1", category="gpu_compute", price=None):
    """One line: a cost (None = unpriced), the unit price's spread for quantity 1 unless given."""
    c = None if cost is None else Decimal(cost)
    p = Decimal(price) if price is not None else c
    q = Decimal(quantity) if quantity is not None else None
    return Line(
        "t",
        "r",
        key,
        "month",
        q,
        p,
        c,
        category,
        "estimate" if c is not None else "missing",
        key,
        "payg",
        "src",
        "2026-01-01" if c is not None else "",
        price_low=None if c is None else Decimal(low if low is not None else cost),
        price_high=None if c is None else Decimal(high if high is not None else cost),
    )


def option(billing, *lines, cloud="alicloud", region="cn-hangzhou"):
    e = Estimate("s", cloud, region, "x", billing, "CNY", "2026-01-01", "2026-01-01", list(lines), [], [])
    return Option(cloud, region, "x", billing, [], e)


def test_exact_totals_are_ranked_cheapest_first():
    opts = [option("payg", line("300")), option("monthly", line("200")), option("spot", line("100"))]
    assert [r.rank for r in compare.rank(opts)] == [3, 2, 1]


def test_overlapping_ranges_are_not_ranked_and_say_so():
    opts = [
        option("payg", line("100", low="90", high="130")),
        option("monthly", line("120", low="110", high="125")),
        option("spot", line("50", low="40", high="60")),
    ]
    ranks = compare.rank(opts)
    assert ranks[0].rank is None and ranks[0].why == "overlaps alicloud cn-hangzhou monthly: not ranked"
    assert ranks[1].rank is None and "overlaps alicloud cn-hangzhou payg" in ranks[1].why
    assert ranks[2].rank == 1  # certainly below both
    buf = io.StringIO()
    report.compare_table("s", opts, Console(file=buf, width=100))
    text = " ".join(buf.getvalue().split())
    # issue 29: the table answers (cost/decision.py) where compare.rank stays silent: spot is cheapest, and the
    # overlapping payg / monthly pair is called a toss-up
    assert "100.00 (90.00–130.00)" in text and "cheapest: alicloud cn-hangzhou spot" in text
    assert "next: alicloud cn-hangzhou payg +50.00 CNY/month (certain" in text


def test_a_partial_total_is_never_ranked_above_a_complete_one():
    partial = option("spot", line("100"), line(None, key="clb/instance", category="load_balancer"))
    complete = option("payg", line("150"))
    ranks = compare.rank([partial, complete])
    assert ranks[0].rank is None and ranks[1].rank is None  # 100 + unknown may well be above 150
    assert compare.rank([option("spot", line("200"), line(None, key="clb/instance")), complete])[1].rank == 1
    assert compare.rank([option("spot", line("200"), line(None, key="clb/instance")), complete])[0].rank == 2  # >= 200 > 150
    buf = io.StringIO()
    report.compare_table("s", [partial, complete], Console(file=buf, width=100))
    text = " ".join(buf.getvalue().split())
    assert "≥ 100.00" in text and "1 line(s) without a price" in text


def test_an_unknown_both_options_share_does_not_block_the_ranking():
    lcu = dict(key="clb/lcu", category="load_balancer", quantity=None)
    opts = [option("payg", line("300"), line(None, **lcu)), option("spot", line("100"), line(None, **lcu))]
    assert [r.rank for r in compare.rank(opts)] == [2, 1]  # the same unknown LCU line on both: the order is certain
    other_cloud = option("payg", line("100"), line(None, **lcu), cloud="tencentcloud", region="ap-shanghai")
    assert compare.rank([opts[0], other_cloud])[0].rank is None  # another cloud's LCU price is another unknown


def test_compare_json_names_ranks_ranges_and_unpriced():
    opts = [option("payg", line("100", low="90", high="130")), option("spot", line("50"), line(None, key="eip/hold"))]
    rows = compare.as_json("s", opts)["rows"]
    assert rows[0]["range"] == {"low": "90.00", "high": "130.00"} and rows[0]["complete"] is True
    assert rows[1]["complete"] is False and rows[1]["range"]["high"] is None and rows[1]["unpriced"] == ["r: eip/hold"]
    assert rows[0]["rank"] is None and rows[0]["not_ranked"].startswith("overlaps")


@pytest.mark.parametrize("columns", [100])
def test_prod_compare_fits_100_columns_with_every_total_in_full(columns, monkeypatch):
    """issue 20 done-when: `COLUMNS=100 gpufleet cost compare --stack alicloud-cn-hangzhou-prod`."""
    import typer
    from typer.testing import CliRunner

    from gpufleet.cli import cost as cost_cli

    app = typer.Typer()
    cost_cli.register(app)
    runner = CliRunner()
    env = {**os.environ, "COLUMNS": str(columns)}
    r = runner.invoke(app, ["cost", "compare", "--stack", "alicloud-cn-hangzhou-prod"], env=env)
    assert r.exit_code == 0, r.output
    widths = [len(l) for l in r.output.splitlines()]
    assert max(widths) <= columns
    j = json.loads(runner.invoke(app, ["cost", "compare", "--stack", "alicloud-cn-hangzhou-prod", "--format", "json"]).output)
    for row in j["rows"]:
        if row["monthly_total"] is not None:
            shown = ("" if row["complete"] else "≥ ") + row["monthly_total"]
            assert shown in r.output, shown
