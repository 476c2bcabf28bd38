"""`gpufleet cost tokens`: CNY per million output tokens and per request from a load test, checked by hand from the
catalog rows, on the shipped synthetic example and on a fresh load test of the fake server (tests/sizing/fake_openai.py)."""

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from test_budget import a100_stack  # noqa: F401 - the fixture: a stack on one A100 whose catalog lacks its price

from gpufleet.cost import catalog
from gpufleet.errors import UserError
from gpufleet.finance import tokens
from gpufleet.sizing.loadtest import DEFAULT_PROMPT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "loadtest-example.json"
STACK = "alicloud-cn-hangzhou-prod"
sys.path.insert(0, str(ROOT / "tests" / "sizing"))


def cli(*args):
    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )


def node_by_hand(billing: str) -> Decimal:
    """One prod node-month from the catalog rows: the instance and its 100 GiB PL0 system and 200 GiB PL1 data disks
    (stacks/Pulumi.alicloud-cn-hangzhou-prod.yaml: disks.system standard 100, disks.data performance 200); hourly
    rows x 730 for payg and spot (disks of a spot node are pay-as-you-go), monthly rows once for a subscription. A spot
    node is spread evenly over the configuration's three A10 types (ESS SpotInstancePools 3: a third of 730 h each)."""
    cat = catalog.load("alicloud", "cn-hangzhou")
    hours = Decimal(730) if billing in ("payg", "spot") else Decimal(1)
    disk_billing = "payg" if billing in ("payg", "spot") else billing
    pools = ("ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c16g1.4xlarge", "ecs.gn7i-c32g1.8xlarge") if billing == "spot" else ()

    def cents(x: Decimal) -> Decimal:
        return x.quantize(Decimal("0.01"))

    if pools:  # 3.1000, 2.4000 and 4.3279 an hour: 754.33 + 584.00 + 1053.12
        instance = sum((cents(hours / 3 * cat.get(f"instance/{t}", "spot").price) for t in pools), Decimal(0))
    else:
        instance = cents(hours * cat.get("instance/ecs.gn7i-c8g1.2xlarge", billing).price)
    return (
        instance
        + cents(100 * hours * cat.get("disk/cloud_essd/PL0", disk_billing).price)
        + cents(200 * hours * cat.get("disk/cloud_essd/PL1", disk_billing).price)
    )


def check_by_hand(j: dict, result: dict) -> None:
    knee = next(lv for lv in result["levels"] if lv["concurrency"] == result["knee"]["concurrency"])
    tok, rps = Decimal(str(knee["output_tokens_per_s"])), Decimal(str(knee["requests_per_s"]))
    seconds = Decimal(730 * 3600)
    assert j["seconds_per_month"] == "2628000"
    for b in j["billing"]:
        node = node_by_hand(b["billing"])
        assert Decimal(b["node_monthly"]) == node, b["billing"]
        for p in b["points"]:
            u = Decimal(p["utilisation"])
            expect = node / (tok * u * seconds) * 1_000_000
            assert abs(Decimal(p["per_million_output_tokens"]) - expect) < Decimal("0.00006"), (b["billing"], p)
            assert abs(Decimal(p["per_request"]) - node / (rps * u * seconds)) < Decimal("0.0000006")
        assert [p["label"] for p in b["points"]] == ["knee (100%)", "30%", "50%", "80%"]


def test_worked_example_on_the_shipped_synthetic_load_test():
    result = json.loads(EXAMPLE.read_text())
    assert result["synthetic"] is True and "fake server" in result["note"]
    r = cli("cost", "tokens", "--stack", STACK, "--from-loadtest", str(EXAMPLE), "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert [b["billing"] for b in j["billing"]] == ["payg", "monthly", "yearly", "spot"]
    check_by_hand(j, result)
    lt = j["loadtest"]
    assert lt["synthetic"] and lt["prompt_tokens"] == result["request"]["prompt_tokens"] and lt["max_tokens"] == 128
    assert j["warnings"] == []  # recorded for this very stack
    table = cli("cost", "tokens", "--stack", STACK, "--from-loadtest", str(EXAMPLE), "--peak-qps", "40")
    assert table.returncode == 0, table.stderr
    assert "SYNTHETIC" in table.stdout and "prompt tokens" in table.stdout and "output tokens per request" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 100
    payg = j["billing"][0]
    assert payg["node_monthly"] in table.stdout


def test_peak_nodes_are_what_plan_capacity_buys():
    r = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(EXAMPLE), "--peak-qps", "40", "--json")
    j = json.loads(r.stdout)
    plan = json.loads(cli("plan", "capacity", "--peak-qps", "40", "--from-loadtest", str(EXAMPLE), "--json").stdout)
    assert j["peak"]["nodes"] == plan["nodes"]
    node = {b["billing"]: Decimal(b["node_monthly"]) for b in j["billing"]}
    for b in ("payg", "monthly", "yearly"):
        assert Decimal(j["peak"]["monthly"][b]) == node[b] * plan["nodes"]
    # prod spot keeps replicas.min (2) nodes on demand (spec rule; cost compare prices it so): by hand, 4 nodes are
    # 2 x 7336.50 payg (9.53 x 730 + 100 GiB x 730 x 0.0010 + 200 GiB x 730 x 0.0021) + 2 x 2771.05 spot (a third of
    # 730 h on each of the three A10 types ESS spreads spot nodes over: 754.33 + 584.00 + 1053.12 at 3.10, 2.40 and
    # 4.3279 an hour, + the same disks 73.00 + 306.60) = 14673.00 + 5542.10 = 20215.10, not 4 x 2771.05 = 11084.20
    assert plan["nodes"] == 4 and j["peak"]["spot_on_demand_base"] == 2
    assert Decimal(j["peak"]["monthly"]["spot"]) == Decimal("20215.10")


def test_fresh_load_test_of_another_configuration_warns(tmp_path):
    from fake_openai import Behaviour, FakeServer

    doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    doc["config"]["gpufleet:fleet"]["serving"]["max_num_seqs"] = 16
    other = tmp_path / "Pulumi.alicloud-cn-hangzhou-lt.yaml"
    other.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "lt.json"
    with FakeServer(Behaviour(tokens=16)) as srv:
        r = cli(
            "loadtest", "--url", srv.url, "--model", "fake-model", "--stack", str(other), "--concurrency", "1,4",
            "--requests", "8", "--max-tokens", "16", "--slo-p95-ms", "2000", "--save-json", str(out), "--json",
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result == json.loads(r.stdout)
    assert result["stack"]["instance_type"] == "ecs.gn7i-c8g1.2xlarge" and result["stack"]["serving"]["max_num_seqs"] == 16
    request = {"prompt_chars": len(DEFAULT_PROMPT), "prompt_tokens": 10.0, "max_tokens": 16, "output_tokens_per_request": 16.0}
    assert result["request"] == request  # the fake server counts 10 prompt tokens
    t = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(out), "--json", "--utilization", "0.3,0.5,0.8")
    assert t.returncode == 0, t.stderr
    j = json.loads(t.stdout)
    check_by_hand(j, result)
    assert any("serving.max_num_seqs: measured with 16, the stack has 32" in w for w in j["warnings"])
    table = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(out))
    assert "warning" in table.stdout and "max_num_seqs" in table.stdout


def test_a_result_without_its_stack_says_so(tmp_path):
    result = json.loads(EXAMPLE.read_text())
    del result["stack"], result["request"]
    f = tmp_path / "old.json"
    f.write_text(json.dumps(result))
    j = json.loads(cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(f), "--json").stdout)
    assert "does not say which stack it measured" in j["warnings"][0]
    assert f"(run `gpufleet loadtest --stack {STACK} ...`)" in j["warnings"][0]
    assert j["loadtest"]["prompt_tokens"] is None
    # a stack file outside the project: the command to run names its path (its name alone is looked up in stacks/)
    other = tmp_path / "my stacks" / f"Pulumi.{STACK}-copy.yaml"
    other.parent.mkdir()
    other.write_text((ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())
    j = json.loads(cli("cost", "tokens", "-s", str(other), "--from-loadtest", str(f), "--json").stdout)
    assert f"(run `gpufleet loadtest --stack '{other}' ...`)" in j["warnings"][0], j["warnings"]


@pytest.mark.parametrize("serving", [1.5, True, "dtype", ["dtype"]])
def test_a_recorded_serving_that_is_no_mapping_is_said_not_a_traceback(tmp_path, serving):
    """`stack.serving: 1.5` in a hand-edited result was a TypeError traceback ("dtype": an AttributeError); a list was
    read as serving flags the stack shares."""
    result = json.loads(EXAMPLE.read_text())
    result["stack"]["serving"] = serving
    f = tmp_path / "lt.json"
    f.write_text(json.dumps(result))
    r = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(f), "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{f}: serving: measured with {serving!r}, not a mapping of serving flags" in json.loads(r.stdout)["warnings"][0]


def test_bad_input_exits_2(tmp_path):
    for bad in ("0", "1.5", "x", "0.3,,0.5"):
        r = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(EXAMPLE), "--utilization", bad)
        assert r.returncode == 2 and "--utilization" in r.stderr and "Traceback" not in r.stderr, bad
    f = tmp_path / "x.json"
    f.write_text("{}")
    r = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(f))
    assert r.returncode == 2 and "levels" in r.stderr
    r = cli("cost", "tokens", "-s", STACK, "--from-loadtest", str(tmp_path / "none.json"))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_utilisation_parsing():
    assert tokens.parse_utilisation("0.8, 0.3,0.3") == [Decimal("0.3"), Decimal("0.8")]
    with pytest.raises(UserError):
        tokens.parse_utilisation("-0.1")


def test_a_node_without_a_price_is_unpriced_not_free(a100_stack):  # noqa: F811 - the fixture imported above
    """The A100 stack priced from a fixture catalog without the A100 rows (tests/cost/test_budget.py)."""
    import typer
    from typer.testing import CliRunner

    from gpufleet.cli import cost as cost_cli

    app = typer.Typer()
    cost_cli.register(app)
    r = CliRunner().invoke(app, ["cost", "tokens", "-s", a100_stack, "--from-loadtest", str(EXAMPLE), "--json"])
    assert r.exit_code == 0, r.output
    j = json.loads(r.output)
    for b in j["billing"]:
        assert b["node_monthly"] is None and "has no price" in b["problem"]
        assert all(p["per_million_output_tokens"] is None and p["per_request"] is None for p in b["points"])
    assert any("instance_type: measured with 'ecs.gn7i-c8g1.2xlarge'" in w for w in j["warnings"])
