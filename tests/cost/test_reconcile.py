"""issue 29: `cost reconcile` reads both clouds' billing-detail CSVs (English and Chinese headers, UTF-8 and GB18030),
matches lines to declared resources and reports estimate, bill and variance."""

import csv
import io
from decimal import Decimal
from pathlib import Path

import pytest

from gpufleet.errors import UserError
from gpufleet.finance import reconcile

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
    assert r.categories["bandwidth"].bill == Decimal("56.30")  # the EIP line has no name: matched by its fleet tag
    zh = reconcile.run("alicloud-cn-hangzhou-prod", _translated(ALI, ALI_ZH, tmp_path, "gb18030"))
    assert zh.columns["amount"] == "应付金额" and reconcile.as_json(zh)["categories"] == reconcile.as_json(r)["categories"]


def test_tencent_bill_english_and_chinese(tmp_path):
    r = reconcile.run("tencentcloud-ap-guangzhou-prod", TC)
    assert r.cloud == "tencentcloud" and r.columns["amount"] == "Total Cost"
    assert r.categories["gpu_compute"].bill == Decimal("18400.00") and r.categories["disk"].bill == Decimal("120.00")
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
    assert "  load_balancer  estimate     ≥ 121.91  bill       560.20  variance   at most +438.29" in text
