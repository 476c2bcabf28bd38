"""The cost CLI plumbing, on the real program's inventory of the Alibaba prod stack."""

import json

import pytest
import typer
from typer.testing import CliRunner

from gpufleet.cli import cost as cost_cli
from gpufleet.errors import UserError


@pytest.fixture
def app():
    a = typer.Typer()
    cost_cli.register(a)
    return a


def run(app, *args):
    return CliRunner().invoke(app, list(args))


def test_estimate_json(app):
    r = run(app, "cost", "estimate", "--stack", "alicloud-cn-hangzhou-prod", "--json")
    assert r.exit_code == 0, r.output
    j = json.loads(r.output)
    assert j["stack"] == "alicloud-cn-hangzhou-prod" and j["currency"] == "CNY" and j["catalog_as_of"]
    assert {l["category"] for l in j["lines"]} >= {"gpu_compute", "disk", "bandwidth", "nat", "load_balancer"}
    assert j["money_format"] == "decimal strings"


def test_budget_gate(app):
    # prod has a line without a quantity (LCU usage unknown): its total is a lower bound, checked only when allowed
    args = ("cost", "estimate", "--stack", "alicloud-cn-hangzhou-prod", "--allow-unpriced", "--budget")
    assert run(app, *args, "1000000").exit_code == 0
    r = run(app, *args, "1000")
    assert r.exit_code == 1 and "over budget" in r.output


def test_bad_input_is_a_user_error(app):
    r = run(app, "cost", "estimate", "--stack", "alicloud-cn-hangzhou-prod", "--budget", "lots")
    assert isinstance(r.exception, UserError) and "--budget" in str(r.exception)
    r = run(app, "cost", "compare", "--stack", "alicloud-cn-hangzhou-prod", "--format", "xls")
    assert isinstance(r.exception, UserError) and "did you mean 'xlsx'" in str(r.exception)
    r = run(app, "cost", "compare", "--stack", "alicloud-cn-hangzhou-prod", "--format", "xlsx")
    assert isinstance(r.exception, UserError) and "-o FILE.xlsx" in str(r.exception)
    r = run(app, "cost", "compare", "--stack", "alicloud-cn-hangzhou-prod", "--billing", "hourly")
    assert isinstance(r.exception, UserError) and "unknown billing" in str(r.exception)


def test_diff_same_stack_has_no_changes(app):
    r = run(app, "cost", "diff", "--stack", "alicloud-cn-hangzhou-prod", "--stack", "alicloud-cn-hangzhou-prod", "--json")
    assert r.exit_code == 0, r.output
    j = json.loads(r.output)
    assert j["delta"]["value"] == "0.00" and j["delta"]["kind"] == "none" and all(c["status"] == "same" for c in j["changes"])


def test_catalog_build_is_reproducible(app, tmp_path, monkeypatch):
    import shutil

    from gpufleet.cost import catalog

    for p in catalog.DATA.glob("*.yaml"):
        shutil.copy(p, tmp_path / p.name)
    monkeypatch.setattr(catalog, "DATA", tmp_path)
    before = {p.name: p.read_text() for p in tmp_path.glob("*-*-*.yaml")}
    built = catalog.load("alicloud", "cn-hangzhou").built
    r = run(app, "catalog", "build", "--date", built)
    assert r.exit_code == 0, r.output
    assert r.output.count("wrote") == 0 and r.output.count("nothing written") == 2  # same prices: files left alone
    assert before == {p.name: p.read_text() for p in tmp_path.glob("*-*-*.yaml")}
