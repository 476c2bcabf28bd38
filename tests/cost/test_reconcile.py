"""issue 29: `cost reconcile` reads both clouds' billing-detail CSVs (English and Chinese headers, UTF-8 and GB18030),
matches lines to declared resources and reports estimate, bill and variance."""

import csv
import io
from decimal import Decimal
from pathlib import Path

import pytest

from gpufleet.cost.resources import CATEGORIES
from gpufleet.errors import UserError
from gpufleet.finance import allstacks, reconcile
from gpufleet.finance.stack import stack_estimate

ROOT = Path(__file__).resolve().parents[2]
ALI = ROOT / "examples" / "bill-alicloud-example.csv"
TC = ROOT / "examples" / "bill-tencentcloud-example.csv"
# the Chinese headers (the vendors' descriptions of the documented fields; see finance/reconcile.py)
ALI_ZH = {
    "BillingCycle": "账期",
    "ProductName": "产品名称",
    "ProductDetail": "产品明细",
    "InstanceID": "实例ID",
    "NickName": "实例昵称",
    "Tag": "实例标签",
    "Region": "地域",
    "PretaxAmount": "应付金额",
}
TC_ZH = {
    "Product Name": "产品名称",
    "Subproduct Name": "子产品名称",
    "Region": "地域",
    "Instance ID": "实例ID",
    "Instance Name": "实例名称",
    "Component Name": "组件名称",
    "Tag Keys": "标签",
    "Total Cost": "总费用",
}


def _translated(src: Path, names: dict[str, str], tmp_path: Path, encoding: str) -> Path:
    rows = list(csv.reader(io.StringIO(src.read_text(encoding="utf-8"))))
    rows[0] = [names.get(h, h) for h in rows[0]]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    out = tmp_path / f"{src.stem}-zh.csv"
    out.write_bytes(buf.getvalue().encode(encoding))
    return out


def _bill_total(path: Path, column: str) -> Decimal:
    return sum((Decimal(r[column]) for r in csv.DictReader(path.open(encoding="utf-8"))), Decimal(0))


def test_alibaba_bill_matched_by_name_and_tag_with_the_undeclared_line(tmp_path):
    r = reconcile.run("alicloud-cn-hangzhou-prod", ALI)
    assert r.cloud == "alicloud" and r.columns["amount"] == "PretaxAmount"
    res = {m.resource: m for m in r.resources}
    nodes = res["llm-prod-asg-config"]  # both ECS lines carry the scaling configuration's node name
    assert nodes.bill == Decimal("9980.55") + Decimal("9050.10") and nodes.how == "instance name"
    assert nodes.variance == nodes.bill - nodes.estimate
    assert res["llm-prod-net-nat"].variance == Decimal("0.00")  # 335.80 billed, 730 h x (0.23 + 0.23) estimated
    (undeclared,) = r.undeclared
    assert undeclared.name == "billing-db" and undeclared.amount == Decimal("1200.00")
    billed = sum((m.bill for m in r.categories.values()), Decimal(0)) + undeclared.amount
    assert billed == _bill_total(ALI, "PretaxAmount")  # every bill line is counted once, somewhere
    # the EIP line has no name: its fleet tag and product make it the stack's one EIP
    assert res["llm-prod-net-nat-eip"].bill == Decimal("56.30") and res["llm-prod-net-nat-eip"].how == "tag and product"
    zh = reconcile.run("alicloud-cn-hangzhou-prod", _translated(ALI, ALI_ZH, tmp_path, "gb18030"))
    assert zh.columns["amount"] == "应付金额" and reconcile.as_json(zh)["categories"] == reconcile.as_json(r)["categories"]


def test_tencent_bill_english_and_chinese(tmp_path):
    r = reconcile.run("tencentcloud-ap-guangzhou-prod", TC)
    assert r.cloud == "tencentcloud" and r.columns["amount"] == "Total Cost"
    # the nodes' lines and the tagged disk line: the disks are compared with the nodes that hold them
    assert r.categories["gpu_compute + disk"].bill == Decimal("18400.00") + Decimal("120.00")
    assert [b.name for b in r.undeclared] == ["billing-db"]
    zh = reconcile.run("tencentcloud-ap-guangzhou-prod", _translated(TC, TC_ZH, tmp_path, "utf-8-sig"))
    assert zh.columns["id"] == "实例ID" and reconcile.as_json(zh)["resources"] == reconcile.as_json(r)["resources"]


def test_not_a_bill_and_a_bad_amount_are_one_line_errors(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(UserError) as exc:
        reconcile.read_bill(f)
    assert "header" in str(exc.value) and "PretaxAmount" in str(exc.value)
    f.write_text("InstanceID,NickName,PretaxAmount\ni-1,n,twelve\n")
    with pytest.raises(UserError) as exc:
        reconcile.read_bill(f)
    assert "row 2.PretaxAmount: not a number" in str(exc.value)


def test_a_bill_that_is_a_folder_or_missing_is_one_line(tmp_path):
    (tmp_path / "bill.csv").mkdir()
    with pytest.raises(UserError) as exc:
        reconcile.read_bill(tmp_path / "bill.csv")
    assert str(exc.value) == f"{tmp_path / 'bill.csv'}: is a folder, not a file"  # was "[Errno 21] Is a directory"
    with pytest.raises(UserError) as exc:
        reconcile.read_bill(tmp_path / "gone.csv")
    assert "no such file: give the billing-detail CSV" in str(exc.value)


@pytest.mark.parametrize(
    ("cloud", "export"),
    [
        ("alicloud", "on Alibaba from the Expenses and Costs console's Bill Details page (the detailed bill, as CSV)"),
        ("tencentcloud", "on Tencent from the Billing Center's Bill Download page (bill details, L3, as CSV)"),
    ],
)
def test_a_missing_bill_says_which_export_to_download_from_which_console(tmp_path, capsys, cloud, export):
    """A missing --bill said "no such file" and no more (`--from-loadtest` names the command that writes one): it names
    the billing-detail export of the stack's cloud, and the page that describes the columns read."""
    from gpufleet.cli import main

    gone = tmp_path / "gone.csv"
    said = (
        f"{gone}: no such file: give the billing-detail CSV of the month to reconcile, exported {export}; "
        "docs/cost-reports.md (The bill, reconciled) names the columns read"
    )
    with pytest.raises(UserError) as exc:
        reconcile.read_bill(gone, cloud)
    assert str(exc.value) == said
    with pytest.raises(UserError) as exc:
        reconcile.read_bill(gone)  # no cloud: each cloud's export
    assert "exported on Alibaba from the Expenses and Costs" in str(exc.value), str(exc.value)
    assert " or on Tencent from the Billing Center" in str(exc.value), str(exc.value)
    stack = {"alicloud": "alicloud-cn-hangzhou-prod", "tencentcloud": "tencentcloud-ap-guangzhou-prod"}[cloud]
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["cost", "reconcile", "--stack", stack, "--bill", str(gone)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err == f"error {said}\n", err


def test_a_row_repeated_in_every_column_is_counted_and_said(tmp_path):
    """An export joined twice counted its lines twice, silently: the repeat is still counted (a bill may hold two
    equal line items), and the result names it."""
    lines = ALI.read_text(encoding="utf-8").splitlines()
    bill = tmp_path / "twice.csv"
    bill.write_text("\n".join([*lines, lines[1]]) + "\n", encoding="utf-8")
    once, twice = reconcile.run("alicloud-cn-hangzhou-prod", ALI), reconcile.run("alicloud-cn-hangzhou-prod", bill)
    assert once.repeated == [] and twice.repeated == [(len(lines) + 1, 2)]
    amount = Decimal(next(csv.DictReader(io.StringIO("\n".join(lines[:2]))))["PretaxAmount"])
    assert sum(m.bill for m in twice.resources) == sum(m.bill for m in once.resources) + amount
    assert reconcile.as_json(twice)["repeated_rows"] == [{"row": len(lines) + 1, "same_as": 2}]
    assert f"1 row(s) repeat an earlier row in every column, and are counted again (row {len(lines) + 1} = row 2)" in (
        reconcile.text(twice)
    )


def test_a_variance_against_a_lower_bound_estimate_is_a_bound():
    """The CLB's estimate is ≥ 521.91 (its LCUs have no price): its variance was printed as a plain 38.29."""
    r = reconcile.run("alicloud-cn-hangzhou-prod", ALI)
    res = {m.resource: m for m in r.resources}
    clb, nat = res["llm-prod-lb-clb"], res["llm-prod-net-nat"]
    assert not clb.estimate_complete and clb.variance == Decimal("38.29") and clb.variance_text() == "at most +38.29"
    assert nat.estimate_complete and nat.variance_text() == "+0.00"
    text = reconcile.text(r)
    assert "≥ 521.91       560.20    at most +38.29  instance name" in text
    assert "  bandwidth + load_balancer estimate     ≥ 576.51  bill       616.50  variance    at most +39.99" in text


# --- the per-category view compares like with like; shared costs apart; the EIP line is the declared EIP ------------


@pytest.mark.parametrize("stack, bill", [("alicloud-cn-hangzhou-prod", ALI), ("tencentcloud-ap-guangzhou-prod", TC)])
def test_per_category_compares_what_a_bill_line_holds_together(stack, bill):
    """A bill line matched to a resource holds the whole resource: the nodes' ECS lines hold their disks, the CLB's
    line its traffic. Compared per category of the estimate, the disks read "not billed, -1064.94" and the load
    balancer "+438"; the categories such a line holds are one group, whose estimate is cost estimate's for them."""
    r = reconcile.run(stack, bill)
    assert "gpu_compute + disk" in r.categories and "bandwidth + load_balancer" in r.categories
    assert not {"disk", "gpu_compute", "load_balancer", "bandwidth"} & set(r.categories)
    _, est = stack_estimate(stack)
    own = {c: sum((l.monthly_cost or 0 for l in est.lines if l.category == c and not l.shared), Decimal(0)) for c in CATEGORIES}
    for label, g in r.categories.items():
        assert g.estimate == sum((own[c] for c in label.split(" + ")), Decimal(0)), label
    if stack.startswith("alicloud"):  # every Alibaba line is matched to its resource: a group is its resources summed
        res = {m.resource: m for m in r.resources}
        assert r.categories["gpu_compute + disk"].variance == res["llm-prod-asg-config"].variance == Decimal("-1319.41")
        both = res["llm-prod-lb-clb"].variance + res["llm-prod-net-nat-eip"].variance
        assert r.categories["bandwidth + load_balancer"].variance == both == Decimal("39.99")


def test_a_bill_that_splits_a_resource_by_category_is_compared_per_category(tmp_path):
    """Where the bill names each category itself (the nodes' disks on lines of their own), nothing is grouped."""
    rows = list(csv.reader(io.StringIO(ALI.read_text(encoding="utf-8"))))
    head = rows[0]
    split = [head]
    for row in rows[1:]:
        split.append(row)
        if row[head.index("ProductCode")] == "ecs":  # the node's disks, named after the node, on a block-storage line
            disk = list(row)
            disk[head.index("ProductName")], disk[head.index("ProductDetail")] = "块存储", "云盘-按量付费"
            disk[head.index("InstanceID")] = row[head.index("InstanceID")].replace("i-", "d-")
            disk[head.index("PretaxAmount")] = "150.00"
            split.append(disk)
    path = tmp_path / "bill-split.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(split)
    r = reconcile.run("alicloud-cn-hangzhou-prod", path)
    assert r.categories["disk"].bill == Decimal("300.00") and r.categories["gpu_compute"].bill == Decimal("19030.65")
    assert "bandwidth + load_balancer" in r.categories  # the CLB's line still holds its traffic


def test_shared_costs_are_listed_apart_with_the_part_cost_report_allocates():
    """The KMS instance (2499.00 a month, one for the region's three stacks) was charged whole to this stack and listed
    as "estimated but not on the bill"; `cost report --all` allocates 833.00 of it to each."""
    r = reconcile.run("alicloud-cn-hangzhou-prod", ALI)
    assert "llm-prod-role-node" not in r.not_billed and "llm-prod-role-node" not in [m.resource for m in r.resources]
    assert r.not_billed == []  # the EIP is on the bill (tag and product)
    kms = next(x for x in r.shared if x.component.startswith("KMS instance"))
    report = allstacks.report(allstacks.price_all(), "team")
    allocated = next(a["amount"] for a in report.allocations if a["stack"] == r.stack and a["shared"].startswith("KMS instance"))
    assert kms.estimate == Decimal("2499.00") and kms.part == allocated == Decimal("833.00") and len(kms.stacks) == 3
    snapshot = next(x for x in r.shared if "image snapshot" in x.component)
    assert snapshot.category == "disk" and snapshot.part == Decimal("4.00")
    j = reconcile.as_json(r)
    assert {"component": kms.component, "allocated_to_stack": "833.00", "allocate": "evenly"}.items() <= next(
        x for x in j["shared"] if x["component"] == kms.component
    ).items()
    assert "this stack's part 833.00" in reconcile.text(r)


def test_the_docs_example_is_what_reconcile_prints():
    """docs/cost-reports.md shows `cost reconcile` on the example bill: every line it shows (but `...`) is printed."""
    doc = (ROOT / "docs" / "cost-reports.md").read_text()
    shown = doc.split("## The bill, reconciled", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    printed = reconcile.text(reconcile.run("alicloud-cn-hangzhou-prod", ALI)).splitlines()
    lines = [x for x in shown.splitlines() if x.strip() != "..."]
    assert len(lines) >= 10 and all(x in printed for x in lines), [x for x in lines if x not in printed]


# ---- the shared costs' allocation reads only the stacks that may share them --------------------------------------

PROD = "alicloud-cn-hangzhou-prod"


def _project(tmp_path: Path, monkeypatch) -> Path:
    import shutil

    for part in ("Pulumi.yaml", "stacks", "images", "cost"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy)(ROOT / part, tmp_path / part)
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    return tmp_path


def _exit(*argv: str) -> int:
    from gpufleet.cli import main

    try:
        main(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.parametrize(
    "fleet",
    [
        "{cloud: nope}",  # the findings' reproduction: no cloud gpufleet knows
        "{cloud: tencentcloud, region: ap-guangzhou}",  # another cloud
        "{cloud: alicloud, region: cn-beijing}",  # another region of the same cloud
    ],
)
def test_a_broken_stack_that_cannot_share_the_costs_changes_nothing(tmp_path, monkeypatch, capsys, fleet):
    """A broken stack file of another cloud or region made `cost reconcile` of a valid stack exit 2 naming only that
    file (the allocation priced every stack of the project, and `cost report --all` refuses a broken one); it cannot
    share a cost of alicloud cn-hangzhou, so the parts are those `cost report --all` makes without it."""
    project = _project(tmp_path, monkeypatch)
    (project / "stacks" / "Pulumi.broken-x.yaml").write_text(f"config:\n  gpufleet:fleet: {fleet}\n")
    r = reconcile.run(PROD, ALI)
    kms = next(x for x in r.shared if x.component.startswith("KMS instance"))
    assert r.notes == [] and kms.part == Decimal("833.00") and len(kms.stacks or ()) == 3
    code = _exit("cost", "reconcile", "--stack", PROD, "--bill", str(ALI))
    out = capsys.readouterr()
    assert code == 0 and "this stack's part 833.00" in out.out and "broken-x" not in out.out + out.err


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("config:\n  gpufleet:fleet: {cloud: alicloud, region: cn-hangzhou}\n", "fleet.zones: Field required"),
        ("config: [\n", "not valid YAML"),  # its cloud and region unknown: it may share them
    ],
)
def test_a_broken_stack_that_may_share_the_costs_leaves_the_part_unknown(tmp_path, monkeypatch, capsys, text, why):
    """A stack of the same cloud and region (or one whose cloud does not read) that is broken: the reconciliation of
    this stack's own lines is made, the shared costs are listed whole with no part, and a note names the file; `cost
    report --all` still refuses the project (exit 2)."""
    project = _project(tmp_path, monkeypatch)
    (project / "stacks" / "Pulumi.broken-x.yaml").write_text(text)
    r = reconcile.run(PROD, ALI)
    kms = next(x for x in r.shared if x.component.startswith("KMS instance"))
    assert kms.estimate == Decimal("2499.00") and kms.part is None and kms.stacks is None
    (note,) = r.notes
    assert "stacks/Pulumi.broken-x.yaml cannot be read or validated" in note and why in note
    assert r.categories["nat"].bill == Decimal("335.80")  # the stack's own lines are reconciled
    j = reconcile.as_json(r)
    assert j["notes"] == [note] and {"allocated_to_stack": None, "stacks": None}.items() <= j["shared"][0].items()
    code = _exit("cost", "reconcile", "--stack", PROD, "--bill", str(ALI))
    out = capsys.readouterr()
    assert code == 0 and f"note: {note}" in out.out and "this stack's part not known" in out.out
    assert _exit("cost", "report", "--all") == 2 and "stacks/Pulumi.broken-x.yaml" in capsys.readouterr().err


def test_only_the_stacks_of_the_same_cloud_and_region_are_priced(monkeypatch):
    """The allocation priced every stack of the project (the other cloud's too, and its own a second time) to show this
    stack's shared part."""
    priced: list[str] = []
    price_all = allstacks.price_all

    def spy(stacks=None):
        priced.extend(stacks or [])
        return price_all(stacks)

    monkeypatch.setattr(allstacks, "price_all", spy)
    r = reconcile.run(PROD, ALI)
    assert sorted(priced) == ["alicloud-cn-hangzhou-dev", "alicloud-cn-hangzhou-staging"]  # not its own again
    assert next(x for x in r.shared if x.component.startswith("KMS instance")).part == Decimal("833.00")
