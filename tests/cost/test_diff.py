"""cost diff: unpriced deltas are named and never reported as savings; per category with %; scenarios; baselines."""

import json
from decimal import Decimal

import pytest
import typer
import yaml
from typer.testing import CliRunner

from gpufleet import plan
from gpufleet.cli import cost as cost_cli
from gpufleet.cost import catalog, diff, estimate, usage
from gpufleet.errors import UserError
from gpufleet.finance import report

PROD = "alicloud-cn-hangzhou-prod"
A100 = "ecs.gn7-c12g1.3xlarge"


def _estimate(raw, data=None):
    option = plan.for_spec(raw, PROD, file="x")
    fleet = option.fleet
    return estimate.price_inventory(PROD, fleet.spec, fleet.instance_type.type, option.resources, usage.load(PROD), data=data)


@pytest.fixture
def no_a100_catalog(tmp_path):
    """The shipped Hangzhou catalog without the A100 instance rows (the shipped data may gain the price one day)."""
    src = catalog.catalog_path("alicloud", "cn-hangzhou")
    doc = yaml.safe_load(src.read_text())
    doc["rows"] = [r for r in doc["rows"] if r["key"] != f"instance/{A100}"]
    (tmp_path / src.name).write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return tmp_path


def test_a10_to_a100_with_the_a100_price_missing_reports_no_saving(no_a100_catalog):
    raw = plan.for_stack(PROD).raw
    a = _estimate(raw, no_a100_catalog)
    a100 = {**raw, "gpu": {"kind": "A100-40G", "count": 1}, "zones": ["cn-hangzhou-h", "cn-hangzhou-j"]}
    b = _estimate(a100, no_a100_catalog)
    assert b.instance_type == A100 and not b.complete
    r = diff.run(a, b)
    assert b.monthly_total < a.monthly_total  # the priced parts alone would read as a saving of ~18000
    assert r.total.kind == "unknown" and r.total.value is None and r.total.high is None
    gpu = r.by_category["gpu_compute"]
    # B's GPU cost is somewhere from 0 up: the delta is at least minus the high end of A's GPU cost, with no upper end
    assert gpu.kind == "unknown" and gpu.low == -next(l for l in a.lines if l.category == "gpu_compute").high
    named = {c.key: c.unpriced for c in r.unpriced}
    assert named["ScalingConfiguration asg-config instance"] == "B: price missing"
    md = report.diff_markdown(r)
    assert "no saving or increase can be claimed" in md and "**Unpriced deltas**" in md and "saving -" not in md
    assert f"| gpu_compute | {a.categories['gpu_compute'].value} | unpriced |" in md
    j = report.diff_json(r)
    assert j["delta"]["kind"] == "unknown" and j["delta"]["value"] is None
    assert any(u["key"] == "ScalingConfiguration asg-config instance" for u in j["unpriced_deltas"])


def test_a_real_saving_and_its_percent_per_category(ali_inventory, prod_fleet):
    raw = plan.for_stack(PROD).raw
    a = _estimate(raw)
    b = _estimate({**raw, "billing": {"model": "spot", "on_demand_base": 2}})
    r = diff.run(a, b)
    gpu = r.by_category["gpu_compute"]
    ga, gb = a.categories["gpu_compute"].value, b.categories["gpu_compute"].value
    assert gpu.kind == "saving" and gpu.value == gb - ga
    assert diff.percent(gpu, a.categories["gpu_compute"]) == f"{((gb - ga) / ga * 100).quantize(Decimal('0.1')):+}%"
    # the same unknown (the CLB LCU line, usage unknown and no price on both sides) cancels: the total is a saving
    assert r.total.kind == "saving" and r.total.value == b.monthly_total - a.monthly_total
    assert not r.unpriced


def test_replicas_max_shows_in_the_peak_scenario():
    raw = plan.for_stack(PROD).raw
    a, b = _estimate(raw), _estimate({**raw, "replicas": {**raw["replicas"], "max": 16}})
    r = diff.run(a, b)
    assert r.total.kind == "none"  # the average is unchanged
    peak = r.scenarios["peak"]
    assert peak.kind == "increase" and peak.value == b.scenarios["peak"].total.value - a.scenarios["peak"].total.value
    rate = catalog.load("alicloud", "cn-hangzhou").get("instance/ecs.gn7i-c8g1.2xlarge", "payg").price
    assert peak.value > 8 * 730 * rate  # 8 more nodes: their GPU hours and their disks
    assert "peak" in report.diff_markdown(r)


def _app():
    a = typer.Typer()
    cost_cli.register(a)
    return a


def test_baseline_round_trip_and_formats(tmp_path):
    runner = CliRunner()
    saved = runner.invoke(_app(), ["cost", "estimate", "--stack", PROD, "--json"])
    assert saved.exit_code == 0, saved.output
    f = tmp_path / "before.json"
    f.write_text(saved.output)
    base = diff.load_baseline(f)
    assert base.monthly_total == Decimal(json.loads(saved.output)["monthly_total"]) and base.prefix == "llm-prod"
    r = runner.invoke(_app(), ["cost", "diff", "--stack", PROD, "--baseline", str(f), "--json"])
    assert r.exit_code == 0, r.output
    j = json.loads(r.output)
    assert j["delta"]["kind"] == "none" and all(c["status"] == "same" for c in j["changes"])
    out = tmp_path / "pr.md"
    r = runner.invoke(_app(), ["cost", "diff", "--stack", PROD, "--baseline", str(f), "--format", "markdown", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith(f"### Cost diff: `{PROD}` → `{PROD}`")
    r = runner.invoke(_app(), ["cost", "diff", "--stack", PROD, "--baseline", str(f)], env={"COLUMNS": "100"})
    assert r.exit_code == 0 and "no change" in r.output and max(len(l) for l in r.output.splitlines()) <= 100


def test_baseline_problems_are_user_errors(tmp_path):
    runner = CliRunner()
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"stack": PROD, "monthly_total": "1"}))
    r = runner.invoke(_app(), ["cost", "diff", "--stack", PROD, "--baseline", str(old)])
    assert isinstance(r.exception, UserError) and "schema_version: missing" in str(r.exception)
    old.write_text(json.dumps({"schema_version": 1}))
    with pytest.raises(UserError, match="schema_version: is 1; this gpufleet reads saved estimates of schema_version 2"):
        diff.load_baseline(old)
    with pytest.raises(UserError, match="no such file"):
        diff.load_baseline(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema_version": 2, "stack": PROD}))
    with pytest.raises(UserError, match="not a readable saved cost estimate"):
        diff.load_baseline(broken)
    r = runner.invoke(_app(), ["cost", "diff", "--stack", PROD])
    assert isinstance(r.exception, UserError) and "give --stack twice" in str(r.exception)
    r = runner.invoke(_app(), ["cost", "diff", "--stack", PROD, "--stack", PROD, "--format", "html"])
    assert isinstance(r.exception, UserError) and "unknown format 'html'" in str(r.exception)


def _saved(tmp_path, *argv):
    """A saved `cost estimate --json` of PROD (with argv), as a dict."""
    r = CliRunner().invoke(_app(), ["cost", "estimate", "--stack", PROD, "--json", *argv])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.parametrize(
    ("edit", "field", "why"),
    [
        (lambda d: d.pop("monthly_total"), "monthly_total", "missing"),  # was a decimal.InvalidOperation traceback
        (lambda d: d["lines"][0].update(monthly_quantity="Infinity"), "lines.0.monthly_quantity", "not a finite number"),
        (lambda d: d["lines"][0].update(monthly_cost="1e999999"), "lines.0.monthly_cost", "not a finite number"),
        (lambda d: d["lines"][0].update(unit_price=[1]), "lines.0.unit_price", "expected a decimal string"),
        (lambda d: d["scenarios"]["average"].update(monthly_total="sNaN"), "scenarios.average.monthly_total", "not a finite"),
        (lambda d: d["scenarios"]["peak"].update(complete="yes"), "scenarios.peak.complete", "expected true or false"),
        (lambda d: d.update(lines=["x"]), "lines.0", "expected an object, got text"),  # was "TypeError: string indices ..."
        (lambda d: d["lines"][0].update(category="nope"), "lines.0.category", "unknown category 'nope'"),  # was read
        (lambda d: d.update(stack={"a": 1}), "stack", "expected text, got a mapping"),  # was read, and printed as A
    ],
)
def test_a_baseline_field_that_cannot_be_read_back_is_named(tmp_path, capsys, edit, field, why):
    from gpufleet.cli import main

    doc = _saved(tmp_path)
    edit(doc)
    f = tmp_path / "before.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(UserError) as exc:
        diff.load_baseline(f)
    assert str(exc.value).startswith(f"{f}: {field}: {why}") and "not a readable saved cost estimate" in str(exc.value)
    with pytest.raises(SystemExit) as code:
        main(["cost", "diff", "--stack", PROD, "--baseline", str(f)])
    err = capsys.readouterr().err
    assert code.value.code == 2 and "Traceback" not in err and f"{f}: {field}: " in err


def test_a_baseline_in_another_currency_is_refused(tmp_path):
    """A baseline saved with --currency USD was subtracted from B's CNY figures: a +612% "increase" of a stack that had
    not changed."""
    f = tmp_path / "before-usd.json"
    f.write_text(json.dumps(_saved(tmp_path, "--currency", "USD", "--fx", "7.12@2026-12-01")))
    r = CliRunner().invoke(_app(), ["cost", "diff", "--stack", PROD, "--baseline", str(f)])
    assert isinstance(r.exception, UserError), r.output
    assert str(r.exception).startswith(f"{f}: currency: A is in USD (converted from CNY at 7.12 CNY/USD, 2026-12-01), B in CNY")
    assert "save A without --currency" in str(r.exception)


def test_dev_to_prod_names_the_unpriced_lines_and_the_bounded_part():
    """issue 27: dev -> prod said "unknown (−∞ to +14966.78)". It now says the bound in words, which lines have no
    price (resource and what it bills) and the change over the lines priced on both sides."""
    from gpufleet.finance.stack import stack_estimate

    a = stack_estimate("alicloud-cn-hangzhou-dev")[1]
    b = stack_estimate("alicloud-cn-hangzhou-prod")[1]
    r = diff.run(a, b)
    assert r.total.low is None and r.total.high is not None  # A (dev) has lines of unknown usage that prod prices
    sentence = report._total_sentence(r)
    assert f": at most {r.total.high:+};" in sentence and "∞" not in sentence and "unknown (" not in sentence
    assert r.unpriced
    for c in r.unpriced:
        line = c.a if c.a is not None and c.a.monthly_cost is None else c.b
        assert f"{line.resource_name} {line.component} ({c.unpriced}): at most" in sentence, c.key
    both = [c for c in r.changes if not c.unpriced]
    assert r.priced.value == sum((c.span.value for c in both), Decimal(0))
    assert f"the lines priced on both sides change by {r.priced.text()}" in sentence
    assert report.diff_json(r)["priced_delta"]["value"] == str(r.priced.value)
