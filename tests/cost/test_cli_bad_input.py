"""Bad input to the cost commands, run as the console script runs them: exit 2, one line per problem naming the file
(or option), the field and the fix, no traceback, nothing written."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALI_BILL = ROOT / "examples" / "bill-alicloud-example.csv"
LOADTEST = ROOT / "examples" / "loadtest-example.json"
PROD = "alicloud-cn-hangzhou-prod"


def refused(capsys, *argv) -> str:
    """stderr of a command that must exit 2 (bad input) without a traceback."""
    from gpufleet.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    assert exc.value.code == 2, out
    assert "Traceback" not in out.err + out.out and "Error:" not in out.err
    return out.err


def bill_with(tmp_path: Path, row: int, column: str, value: str) -> Path:
    rows = list(csv.reader(io.StringIO(ALI_BILL.read_text(encoding="utf-8"))))
    rows[row - 1][rows[0].index(column)] = value
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    f = tmp_path / "bill.csv"
    f.write_text(buf.getvalue(), encoding="utf-8")
    return f


@pytest.mark.parametrize("amount", ["1e400", "-1e400", "1234567890123456789", "9" * 40])
def test_reconcile_refuses_an_amount_out_of_range(tmp_path, capsys, amount):
    bill = bill_with(tmp_path, 3, "PretaxAmount", amount)
    out = tmp_path / "out.json"
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill, "--json", "-o", out)
    assert f"{bill}: row 3.PretaxAmount: out of range: {amount!r}" in err
    assert not out.exists()


def test_reconcile_reads_large_and_tiny_amounts_that_are_money(tmp_path, capsys):
    from gpufleet.finance import reconcile

    bill = bill_with(tmp_path, 2, "PretaxAmount", "999999999999999.99")
    assert reconcile.read_bill(bill)[2][0].amount == reconcile.Decimal("999999999999999.99")
    bill = bill_with(tmp_path, 2, "PretaxAmount", "1e-400")  # rounds to 0.00: not refused
    assert reconcile.run(PROD, bill).resources


def test_reconcile_refuses_a_field_past_the_csv_limit(tmp_path, capsys):
    bill = bill_with(tmp_path, 4, "NickName", "x" * 140_000)
    out = tmp_path / "out.json"
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill, "--json", "-o", out)
    assert f"{bill}: row 4: not CSV this reads (field larger than field limit (131072); line 4 of the file)" in err
    assert "export the billing detail as CSV again" in err and not out.exists()


@pytest.mark.parametrize("value", ["1e-300", "0.001", "0", "-0.5", "1.5", "nan"])
def test_tokens_utilization_out_of_range(tmp_path, capsys, value):
    out = tmp_path / "out.json"
    err = refused(capsys, "cost", "tokens", "-s", PROD, "--from-loadtest", LOADTEST, "--utilization", value, "-o", out)
    assert f"--utilization: {value!r}: give fractions of the knee's throughput from 0.01 (1 %) to 1" in err
    assert not out.exists()


def test_tokens_smallest_utilization_is_priced_and_labelled_exactly(capsys):
    from gpufleet.cli import main

    main(["cost", "tokens", "-s", PROD, "--from-loadtest", str(LOADTEST), "--utilization", "0.01,0.015", "--json"])
    (payg, *_) = json.loads(capsys.readouterr().out)["billing"]
    assert [p["label"] for p in payg["points"]] == ["knee (100%)", "1%", "1.5%"]


def _knee_rps(d: dict, value: float) -> None:
    """The knee and its level measured `value` requests/s (a consistent file: the shared load-test check passes it)."""
    d["knee"]["requests_per_s"] = value
    next(lv for lv in d["levels"] if lv["concurrency"] == d["knee"]["concurrency"])["requests_per_s"] = value


@pytest.mark.parametrize(
    ("edit", "field", "why"),
    [
        (lambda d: _knee_rps(d, 1e-300), "knee.requests_per_s", "not a throughput measured by a load test"),
        (lambda d: [lv.update(output_tokens_per_s=1e-300) for lv in d["levels"]], "levels.2.output_tokens_per_s", "not a"),
        # above any node's rate: refused by the load-test check every command shares (sizing.capacity.result_problems)
        (lambda d: _knee_rps(d, 1e300), "levels.2.requests_per_s", ""),
    ],
)
def test_tokens_refuses_a_loadtest_throughput_out_of_range(tmp_path, capsys, edit, field, why):
    data = json.loads(LOADTEST.read_text())
    edit(data)
    lt = tmp_path / "lt.json"
    lt.write_text(json.dumps(data))
    err = refused(capsys, "cost", "tokens", "-s", PROD, "--from-loadtest", lt)
    assert f"{lt}: {field}: must be " in err and why in err


def test_reconcile_refuses_an_empty_amount(tmp_path, capsys):
    bill = bill_with(tmp_path, 3, "PretaxAmount", "")
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill)
    assert f"{bill}: row 3.PretaxAmount: empty: every bill line has an amount" in err


@pytest.mark.parametrize("amount", ["9,98", "1.234,50", "1,2345.00", ",5", "1,,000"])
def test_reconcile_refuses_a_decimal_comma(tmp_path, capsys, amount):
    """A comma that does not group thousands was dropped: `9,98` (a spreadsheet in another locale) read as 998, and
    `1.234,50` as 1.2345, silently."""
    bill = bill_with(tmp_path, 2, "PretaxAmount", amount)
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill)
    assert f"{bill}: row 2.PretaxAmount: not a number: {amount!r} has a comma that does not group thousands" in err
    assert "write the amount with a decimal point" in err


@pytest.mark.parametrize(
    ("edit", "cells"),
    [
        (lambda line: line.replace(",9980.55", ",9980,55"), 12),  # an unquoted decimal comma: read as 9980, 55 dropped
        (lambda line: line.replace(",9980.55", ",9.980,55"), 12),  # read as 9.98
        (lambda line: line + ",extra,cells", 13),
        (lambda line: line.rpartition(",")[0], 10),  # a cell short: the amount was read from the wrong column
    ],
)
def test_reconcile_refuses_a_row_whose_cells_are_not_the_headers(tmp_path, capsys, edit, cells):
    lines = ALI_BILL.read_text(encoding="utf-8").splitlines()
    lines[1] = edit(lines[1])
    bill = tmp_path / "bill.csv"
    bill.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill, "--json", "-o", out)
    assert f"{bill}: row 2: has {cells} cells, the header has 11: every row has the header's columns" in err
    assert "export the bill again as CSV, amounts written with a decimal point" in err and not out.exists()


@pytest.mark.parametrize(("cell", "amount"), [("1,234.50", "1234.50"), ("¥ 12,345,678.9", "12345678.9"), ("-1,000", "-1000")])
def test_reconcile_reads_thousands_separators(tmp_path, cell, amount):
    from gpufleet.finance import reconcile

    bill = bill_with(tmp_path, 2, "PretaxAmount", cell)
    assert reconcile.read_bill(bill)[2][0].amount == reconcile.Decimal(amount)


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "-s", PROD, "-o", "{stack}"],
        ["estimate", "-s", "{stack}", "--format", "csv", "-o", "{link}"],
        ["compare", "-s", PROD, "--usage", "{usage}", "-o", "{usage}"],
        ["commit", "-s", PROD, "-o", "{own_usage}"],
        ["diff", "-s", PROD, "-s", "alicloud-cn-hangzhou-dev", "-o", "{dev}"],
        ["tokens", "-s", PROD, "--from-loadtest", "{lt}", "--json", "-o", "{lt}"],
        ["reconcile", "-s", PROD, "--bill", "{bill}", "-o", "{bill}"],
        ["report", "--all", "-o", "{dev}"],
        ["budget", "--budgets", "{budgets}", "-o", "{budgets}"],
    ],
)
def test_output_is_never_an_input_of_the_command(tmp_path, capsys, argv):
    import shutil

    from gpufleet.cost.usage import stack_usage_file
    from gpufleet.stacks.loader import stack_path

    files = {
        "stack": stack_path(PROD),
        "dev": stack_path("alicloud-cn-hangzhou-dev"),
        "own_usage": stack_usage_file(PROD)[0],
        "usage": tmp_path / "usage.yaml",
        "lt": tmp_path / "lt.json",
        "bill": tmp_path / "bill.csv",
        "budgets": tmp_path / "budgets.yaml",
        "link": tmp_path / "link.yaml",
    }
    files["usage"].write_text("replicas_average: 2\n")
    shutil.copy(LOADTEST, files["lt"])
    shutil.copy(ALI_BILL, files["bill"])
    shutil.copy(ROOT / "examples" / "budgets-example.yaml", files["budgets"])
    files["link"].symlink_to(files["stack"])
    before = {k: Path(v).read_bytes() for k, v in files.items()}
    args = [a.format(**files) for a in argv]
    err = refused(capsys, "cost", *args)
    assert f"-o: {args[-1]}: is an input of this command" in err and "give another file" in err
    assert {k: Path(v).read_bytes() for k, v in files.items()} == before


@pytest.mark.parametrize(
    ("date", "why"),
    [
        ("2026-02-30", "is not a date"),
        ("yesterday", "is not a date"),
        ("20261203", "is not a date"),  # date.fromisoformat reads it; the files say YYYY-MM-DD
        ("2026-W49-1", "is not a date"),
        ("2026-12-06", "is after today (2026-12-05)"),
        ("1900-01-01", "is before the newest price in the sources ("),  # was stamped on every catalog
    ],
)
def test_catalog_build_refuses_a_bad_date(capsys, monkeypatch, date, why):
    from gpufleet.cost import catalog

    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-05T12:00:00Z")
    before = {p: p.read_bytes() for p in catalog.DATA.glob("*.yaml")}
    err = refused(capsys, "catalog", "build", "--date", date)
    assert err.startswith("error --date: ") and date in err and why in err
    assert {p: p.read_bytes() for p in catalog.DATA.glob("*.yaml")} == before


@pytest.mark.parametrize("average", ["1000000", "0", "1.5", "8.01"])
@pytest.mark.parametrize("command", ["estimate", "compare", "tokens"])
def test_usage_average_outside_the_stacks_replicas(tmp_path, capsys, average, command):
    usage = tmp_path / "usage.yaml"
    usage.write_text(f"replicas_average: {average}\n")
    more = ["--from-loadtest", LOADTEST] if command == "tokens" else []
    err = refused(capsys, "cost", command, "-s", PROD, "--usage", usage, *more)
    assert (
        f"{usage}: replicas_average: {average} average running nodes is outside the replicas of "
        f"stacks/Pulumi.{PROD}.yaml, min 2 to max 8" in err
    )
    assert "give a value from 2 to 8" in err


@pytest.mark.parametrize("average", ["2", "5.5", "8"])
def test_usage_average_within_the_stacks_replicas_is_priced(tmp_path, capsys, average):
    from gpufleet.cli import main

    usage = tmp_path / "usage.yaml"
    usage.write_text(f"replicas_average: {average}\n")
    main(["cost", "estimate", "-s", PROD, "--usage", str(usage), "--json"])
    assert json.loads(capsys.readouterr().out)["scenarios"]["average"]["nodes"] == average


def _two_months(tmp_path: Path) -> Path:
    rows = list(csv.reader(io.StringIO(ALI_BILL.read_text(encoding="utf-8"))))
    rows[2][0] = "2026-10"
    f = tmp_path / "bill.csv"
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    f.write_text(buf.getvalue(), encoding="utf-8")
    return f


def test_reconcile_refuses_a_bill_of_several_cycles_without_month(tmp_path, capsys):
    bill = _two_months(tmp_path)
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill)
    assert f"{bill}: BillingCycle: the bill spans 2 billing cycles (2026-10, 2026-11)" in err and "--month 2026-11" in err


def test_reconcile_month_selects_one_cycle(tmp_path, capsys):
    from gpufleet.cli import main

    bill = _two_months(tmp_path)
    main(["cost", "reconcile", "-s", PROD, "--bill", str(bill), "--month", "2026-11", "--json"])
    j = json.loads(capsys.readouterr().out)
    rows = [r for m in j["resources"] for r in m["bill_rows"]] + [u["row"] for u in j["undeclared"]]
    assert j["billing_cycle"] == "2026-11" and 3 not in rows and 2 in rows
    assert "--month: 2026-09: " in refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill, "--month", "2026-09")
    assert "--month: '2026-13' is not a month" in refused(
        capsys, "cost", "reconcile", "-s", PROD, "--bill", bill, "--month", "2026-13"
    )


@pytest.mark.parametrize("cycle", ["xx", "", "2026-13", "202611", "2026-11-01"])
def test_reconcile_refuses_a_malformed_cycle(tmp_path, capsys, cycle):
    bill = bill_with(tmp_path, 4, "BillingCycle", cycle)
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill)
    assert f"{bill}: row 4.BillingCycle: not a billing cycle: {cycle!r}; a month written YYYY-MM" in err


def test_compare_prices_an_option_named_twice_once(capsys):
    """`--clouds alicloud,alicloud --billing payg,payg` gave four rows of one option, ranked as its own runner-up."""
    from gpufleet.cli import main

    main(["cost", "compare", "-s", PROD, "--clouds", "alicloud,alicloud", "--billing", "payg,yearly,payg", "--json"])
    j = json.loads(capsys.readouterr().out)
    assert [(r["cloud"], r["billing"]) for r in j["rows"]] == [("alicloud", "payg"), ("alicloud", "yearly")]
    assert j["decision"]["runner_up"] != j["decision"]["cheapest"]


def test_reconcile_refuses_a_bill_without_lines(tmp_path, capsys):
    """A header alone was reconciled: every declared resource against a bill of 0.00, exit 0."""
    bill = tmp_path / "bill.csv"
    bill.write_text(ALI_BILL.read_text(encoding="utf-8").splitlines()[0] + "\n\n", encoding="utf-8")
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill)
    assert f"error {bill}: no bill lines under the header: export the billing detail of the month" in err


def test_reconcile_refuses_a_column_it_reads_twice(tmp_path, capsys):
    """A second PretaxAmount column was ignored (the first one read, whichever the user meant)."""
    rows = list(csv.reader(io.StringIO(ALI_BILL.read_text(encoding="utf-8"))))
    rows = [r + (["PretaxAmount"] if i == 0 else ["5"]) for i, r in enumerate(rows)]
    bill = tmp_path / "bill.csv"
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    bill.write_text(buf.getvalue(), encoding="utf-8")
    err = refused(capsys, "cost", "reconcile", "-s", PROD, "--bill", bill)
    assert f"error {bill}: header: column 'PretaxAmount' appears 2 times: keep one and export it again" in err


def test_estimate_refuses_allow_unpriced_without_a_budget(tmp_path, capsys):
    """--allow-unpriced only changes the --budget check; alone it was ignored (exit 0, the user believing a gate ran)."""
    out = tmp_path / "e.json"
    err = refused(capsys, "cost", "estimate", "-s", PROD, "--allow-unpriced", "--json", "-o", out)
    assert "error --allow-unpriced: give --budget too (e.g. --budget 25000 --allow-unpriced)" in err and not out.exists()


def test_tokens_refuses_redundancy_without_a_peak(tmp_path, capsys):
    """--redundancy only sizes the --peak-qps fleet; alone it was ignored (exit 0)."""
    out = tmp_path / "t.json"
    err = refused(capsys, "cost", "tokens", "-s", PROD, "--from-loadtest", LOADTEST, "--redundancy", "3", "--json", "-o", out)
    assert "error --redundancy: give --peak-qps too (e.g. --peak-qps 40 --redundancy 2)" in err and not out.exists()


@pytest.mark.parametrize(
    "argv", [["cost", "tokens", "-s", PROD, "--from-loadtest", LOADTEST], ["plan", "capacity", "--from-loadtest", LOADTEST]]
)
def test_a_peak_beyond_a_million_nodes_names_options_the_command_has(capsys, argv):
    """With a load test's knee as the per-node rate this named `--peak-qps / --qps-per-node`; cost tokens has no
    --qps-per-node, and plan capacity was not given one."""
    err = refused(capsys, *argv, "--peak-qps", "1e9")
    assert "error --peak-qps: would need more than a million nodes (1e+09 / 13.768 QPS per node, the knee of " in err
    assert "--qps-per-node" not in err


@pytest.mark.parametrize(
    "text, said",
    [
        # review F7: read as "budgets: expected a mapping ..., got nothing (null)", a field the user did not write
        ("budget:\n  ml-platform: 60000\n", "budget: unknown key (did you mean 'budgets'?): the file holds only `budgets:`"),
        ("budgets:\n  ml-platform: 60000\nteams: 1\n", "teams: unknown key: the file holds only `budgets:`"),
    ],
)
def test_a_budgets_file_with_another_key_names_that_key(capsys, tmp_path, text, said):
    path = tmp_path / "b.yaml"
    path.write_text(text)
    err = refused(capsys, "cost", "budget", "--budgets", path)
    assert f"{path}: {said}" in err and "null" not in err, err


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # review F9: a mapping read "levels: missing or empty"
        (lambda d: d.update(levels={}), "levels: is a mapping: a load-test result's levels are a list, one per concurrency"),
        # review F11: 999 errors of 64 requests was read
        (lambda d: d["levels"][0].update(errors=999), "levels.0.errors: 999 is more than the level's 64 requests"),
    ],
    ids=["levels-mapping", "errors-over-requests"],
)
@pytest.mark.parametrize("command", [["cost", "tokens", "-s", PROD], ["plan", "capacity", "--peak-qps", "30"]])
def test_a_loadtest_result_that_no_load_test_wrote_is_named(tmp_path, capsys, edit, said, command):
    data = json.loads(LOADTEST.read_text())
    assert data["levels"][0]["requests"] == 64
    edit(data)
    lt = tmp_path / "lt.json"
    lt.write_text(json.dumps(data))
    err = refused(capsys, *command, "--from-loadtest", lt)
    assert f"{lt}: {said}" in err, err


@pytest.mark.parametrize("value", ['"5"', '"nan"'])
def test_a_quoted_number_in_a_usage_file_is_refused_as_the_spec_refuses_one(tmp_path, capsys, value):
    """Review F11: lb_egress_gb: "5" was priced as 5 GB; the spec refuses "8000" for a port (write the number)."""
    usage = tmp_path / "u.yaml"
    usage.write_text(f"lb_egress_gb: {value}\n")
    err = refused(capsys, "cost", "estimate", "-s", PROD, "--usage", usage)
    assert f"{usage}: lb_egress_gb: is text {value.strip(chr(34))!r}: write the number without quotes (e.g. 5), or null" in err


@pytest.mark.parametrize(
    ("command", "flag", "said"),
    [
        (["cost", "estimate"], "--usage", "write one: YAML `usage key: number` lines"),
        (["cost", "tokens", "--from-loadtest", LOADTEST], "--usage", "docs/cost-reports.md: Usage files follow the stack"),
        (["cost", "estimate"], "--discounts", "write one: YAML `discounts: [{match: GLOB, factor: F}]`"),
        (["cost", "compare"], "--discounts", "(docs/cost.md: Discounts)"),
    ],
)
def test_a_missing_usage_or_discounts_file_names_what_to_write(tmp_path, capsys, command, flag, said):
    """Review L7: a missing --usage or --discounts file was a bare `no such file`, where --budgets and --bill say what
    the file holds and where it is described."""
    gone = tmp_path / "gone.yaml"
    err = refused(capsys, *command, "-s", PROD, flag, gone)
    assert f"{gone}: no such file: write one: " in err and said in err, err
    if flag == "--usage":
        from gpufleet.cost.usage import DEFAULTS
        from gpufleet.files import package_file

        assert f"the keys are those of {package_file(DEFAULTS)}" in err


def test_the_fix_of_a_missing_bill_is_built_only_when_the_bill_is_missing(monkeypatch):
    """Review F11: missing_bill (which imports each cloud's pricing module) was built on every read, the ones that
    succeed included."""
    from gpufleet.finance import reconcile

    def fails(cloud=None):
        raise AssertionError("built for a bill that is there")

    monkeypatch.setattr(reconcile, "missing_bill", fails)
    assert reconcile.read_bill(ALI_BILL)[2]
