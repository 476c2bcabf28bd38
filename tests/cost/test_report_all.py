"""`cost report --all`: every shipped stack priced once and grouped by its spec's tags; shared costs (components
marked shared) counted once across stacks; a stack that cannot be priced makes the total a lower bound."""

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest
import yaml

from gpufleet.cost import catalog
from gpufleet.cost.estimate import Line
from gpufleet.errors import UserError
from gpufleet.finance import allstacks
from gpufleet.finance.stack import stack_estimate

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
    own = {s: stack_estimate(s)[1] for s in tags}
    shared = Decimal(j["shared"]["monthly_total"])
    # without shared lines the total is the sum of the stacks' own estimates; with them, less the repeats
    assert Decimal(j["total"]["monthly_total"]) <= sum(e.monthly_total for e in own.values()) + shared
    if not j["shared"]["stacks"]:
        assert Decimal(j["total"]["monthly_total"]) == sum(e.monthly_total for e in own.values())
    assert j["total"]["complete"] == all(not e.unpriced for e in own.values())
    table = cli("cost", "report", "--all")
    assert table.returncode == 0 and "total" in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 100


class SharedLine(Line, frozen=True):
    shared: bool = True


def kms(price: str) -> SharedLine:
    return SharedLine(
        "alicloud:kms/instance:Instance", "kms", "KMS instance", "month", Decimal(1), Decimal(price), Decimal(price),
        "other", "official", "kms/instance", "any", "https://example.invalid/source", "2026-01-01",
    )  # fmt: skip


@pytest.fixture
def prod():
    return stack_estimate("alicloud-cn-hangzhou-prod")[1]


def test_shared_costs_are_counted_once_with_a_note(prod):
    own = [l for l in prod.lines if not l.shared]  # prod's own shared lines: the next test
    own_total = sum(l.monthly_cost for l in own if l.monthly_cost is not None)
    a = msgspec.structs.replace(prod, stack="a", lines=[*own, kms("1000")])
    b = msgspec.structs.replace(prod, stack="b", lines=[*own, kms("1000")])
    c = msgspec.structs.replace(prod, stack="c", lines=list(own))
    r = allstacks.report(
        [
            allstacks.StackCost("a", {"team": "search"}, a),
            allstacks.StackCost("b", {"team": "chat"}, b),
            allstacks.StackCost("c", {}, c),
        ],
        "team",
    )
    assert [g.name for g in r.groups] == ["chat", "search", "untagged"]
    assert all(g.monthly == own_total for g in r.groups)  # the shared line left both groups
    assert r.shared.monthly == Decimal(1000) and r.shared.stacks == ["a", "b"]
    assert r.total.monthly == 3 * own_total + 1000
    assert any("KMS instance (alicloud cn-hangzhou) is declared by a, b and counted once" in n for n in r.notes)
    assert any(n.startswith("untagged: c") for n in r.notes)
    rows = allstacks.as_csv(r).splitlines()
    assert rows[-2].startswith("shared,shared (counted once),a b,CNY,1000.00") and rows[-1].startswith("total,total,")


def cents(x: Decimal) -> Decimal:
    return x.quantize(Decimal("0.01"))


def test_the_shared_lines_of_a_real_estimate_are_counted_once(prod):
    """prod's shared lines, by hand from the catalog rows: the image snapshot (usage image_snapshot_gb unknown: the
    100 GiB system disk x snapshot/standard, 0.12 today = 12.00), the KMS instance (1 x kms/instance, 2499.00 today)
    and the model bucket (usage model_bucket_gb unknown: unpriced)."""
    cat = catalog.load("alicloud", "cn-hangzhou")
    snapshot = cents(100 * cat.get("snapshot/standard", "any").price)
    kms_instance = cents(cat.get("kms/instance", "any").price)
    assert sorted(l.component.split(" ")[0] for l in prod.lines if l.shared) == ["KMS", "image", "model"]
    own_total = prod.monthly_total - snapshot - kms_instance
    r = allstacks.report([allstacks.StackCost(s, {"team": s}, msgspec.structs.replace(prod, stack=s)) for s in "abc"], "team")
    assert [g.monthly for g in r.groups] == [own_total] * 3 and all(g.unpriced_lines == 1 for g in r.groups)  # LCU
    assert r.shared.monthly == snapshot + kms_instance and r.shared.unpriced_lines == 1 and not r.shared.complete
    assert r.shared.stacks == ["a", "b", "c"]
    assert r.total.monthly == 3 * own_total + snapshot + kms_instance and r.total.unpriced_lines == 3 + 1
    assert sum(1 for n in r.notes if n.startswith("shared: ") and "declared by a, b, c and counted once (3 stacks)" in n) == 3


def test_a_shared_cost_one_stack_prices_is_counted_at_that_price(prod):
    """The model bucket unpriced in a (no model_bucket_gb) and 500 GB in b: b's 500 x oss/standard is counted once."""
    price = catalog.load("alicloud", "cn-hangzhou").get("oss/standard", "any").price
    bucket = next(l for l in prod.lines if l.price_key == "oss/standard")
    assert bucket.shared and bucket.monthly_cost is None and bucket.unit_price == price
    sized = msgspec.structs.replace(bucket, monthly_quantity=Decimal(500), monthly_cost=cents(500 * price))
    a = msgspec.structs.replace(prod, stack="a")
    b = msgspec.structs.replace(prod, stack="b", lines=[sized if l is bucket else l for l in prod.lines])
    r = allstacks.report([allstacks.StackCost("a", {}, a), allstacks.StackCost("b", {}, b)], "team")
    priced_shared = sum(l.monthly_cost for l in prod.lines if l.shared and l.monthly_cost is not None)
    assert r.shared.monthly == priced_shared + cents(500 * price) and r.shared.complete
    (note,) = [n for n in r.notes if "model bucket" in n]
    assert f"the stacks disagree on it (a unpriced, b {cents(500 * price)}): {cents(500 * price)} is counted" in note


def test_a_stack_that_cannot_be_priced_is_named_and_the_total_is_a_lower_bound(prod):
    r = allstacks.report(
        [allstacks.StackCost("ok", {"team": "x"}, prod), allstacks.StackCost("broken", {}, None, "stacks/x: bad")], "team"
    )
    assert not r.total.complete and r.total.total_text().startswith("≥ ") and r.total.unpriced_stacks == 1
    assert any("broken: not priced (stacks/x: bad)" in n for n in r.notes)
    assert allstacks.as_json(r)["total"]["complete"] is False


def test_bad_input_exits_2():
    r = cli("cost", "report", "--by", "owner")
    assert r.returncode == 2 and "--by" in r.stderr and "--all" in r.stderr and "Traceback" not in r.stderr
    r = cli("cost", "report", "--all", "--format", "xlsx")
    assert r.returncode == 2 and "--format" in r.stderr


def project_copy(tmp_path, monkeypatch) -> Path:
    import shutil

    tmp_path.mkdir(exist_ok=True)
    for part in ("Pulumi.yaml", "stacks", "images", "cost"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, tmp_path / part)
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    return tmp_path


def test_a_stack_file_whose_name_is_no_stack_name_is_refused_not_priced(tmp_path, monkeypatch):
    """stacks/Pulumi.é-dev.yaml was priced into the report, though every other command refuses the name é-dev; then it
    was a row "not priced", where `gpufleet check` refuses it as bad input."""
    import shutil

    project = project_copy(tmp_path, monkeypatch)
    shutil.copy(project / "stacks" / "Pulumi.alicloud-cn-hangzhou-dev.yaml", project / "stacks" / "Pulumi.é-dev.yaml")
    with pytest.raises(UserError) as exc:
        allstacks.price_all()
    (said,) = [str(p) for p in exc.value.problems]
    assert said.startswith("stacks/Pulumi.é-dev.yaml: ") and "'é-dev' is not a stack name" in said
    assert "rename the file Pulumi.<name>.yaml" in said


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcd", "bcde", strict=True)
)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--all"],
        ["report", "--all", "--json"],
        ["budget", "--budgets", "{budgets}", "--allow-unpriced"],
        ["budget", "--budgets", "{budgets}"],
    ],
)
def test_broken_stack_files_are_bad_input_of_the_all_stacks_commands(tmp_path, monkeypatch, capsys, argv):
    """A duplicate key, an alias bomb and a folder in stacks/ were each priced as an untagged stack costing 0: `cost
    budget --allow-unpriced` said "within budget" (exit 0) naming none, without an untagged budget it pointed at the
    budgets file (exit 1), and `cost report --all` named them only in notes (exit 1). `gpufleet check` refuses the
    same project (exit 2, naming each); so do these now, printing nothing on standard output."""
    from gpufleet.cli import main

    project = project_copy(tmp_path / "project", monkeypatch)
    stacks = project / "stacks"
    dev = stacks / "Pulumi.alicloud-cn-hangzhou-dev.yaml"
    dev.write_text(dev.read_text().replace("config:\n", "config:\n  gpufleet:usage: x\n  gpufleet:usage: y\n", 1))
    (stacks / "Pulumi.alicloud-cn-hangzhou-staging.yaml").write_text(BOMB)
    (stacks / "Pulumi.tencentcloud-ap-guangzhou-y.yaml").mkdir()
    budgets = tmp_path / "budgets.yaml"
    budgets.write_text("budgets:\n  ml-platform: 100000\n  untagged: 1000\n")
    with pytest.raises(SystemExit) as exc:
        main(["cost", *(a.format(budgets=budgets) for a in argv)])
    out = capsys.readouterr()
    assert exc.value.code == 2 and out.out == "" and "Traceback" not in out.err, out
    said = out.err.splitlines()
    assert said == [
        "error stacks/Pulumi.alicloud-cn-hangzhou-dev.yaml:4:3: duplicate key 'gpufleet:usage' (first at line 3); keep one "
        "(the Pulumi CLI refuses duplicates too)",
        "error stacks/Pulumi.alicloud-cn-hangzhou-staging.yaml:4:36: aliases expand to more than 10000 nodes (an alias "
        "bomb?); write the values out or use fewer *aliases",
        "error stacks/Pulumi.tencentcloud-ap-guangzhou-y.yaml: is a folder, not a file",
    ], said
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    assert exc.value.code == 2 and capsys.readouterr().err.splitlines() == said  # the same refusal as check's


def test_a_broken_usage_profile_is_bad_input_of_cost_report_all(tmp_path, monkeypatch, capsys):
    """A stack's `gpufleet:usage` file that does not read made the stack a row "not priced"; check refuses it."""
    from gpufleet.cli import main

    project = project_copy(tmp_path, monkeypatch)
    prod = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    usage_file = yaml.safe_load(prod.read_text())["config"]["gpufleet:usage"]
    (project / usage_file).write_text("replicas_average: .nan\n")
    with pytest.raises(SystemExit) as exc:
        main(["cost", "report", "--all"])
    out = capsys.readouterr()
    assert exc.value.code == 2 and out.out == "" and f"{usage_file}:1:19: '.nan' is not a finite number" in out.err, out


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--all"],
        ["report", "--all", "--json"],
        ["budget", "--budgets", str(ROOT / "examples" / "budgets-example.yaml")],
    ],
)
def test_a_project_without_a_stack_is_refused(tmp_path, monkeypatch, capsys, argv):
    """A project with no stacks/Pulumi.*.yaml: the table was an IndexError traceback, the JSON a report of currency
    "n/a" (exit 0), and `cost budget` passed every budget (exit 0, nothing printed)."""
    from gpufleet.cli import main

    (tmp_path / "Pulumi.yaml").write_text("name: gpufleet\nruntime: python\n")
    (tmp_path / "stacks").mkdir()
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        main(["cost", *argv])
    out = capsys.readouterr()
    assert exc.value.code == 2 and out.out == "" and "Traceback" not in out.err
    assert f"{tmp_path / 'stacks'}: no stack file (Pulumi.<name>.yaml): nothing to report" in out.err
