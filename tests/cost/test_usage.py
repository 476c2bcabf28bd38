from decimal import Decimal

import pytest

from gpufleet.cost import usage
from gpufleet.errors import UserError


def test_schedule_average_weights_the_week():
    # Mon-Fri 01:00 -> 4 nodes, every day 14:00 -> 2: 5 x 13 h at 4, the other 103 h at 2
    avg, how = usage.schedule_average(2, [("0 1 * * 1-5", 4), ("0 14 * * *", 2)])
    assert avg == Decimal(65 * 4 + 103 * 2) / 168  # 2.773809...: priced unrounded (2.7738 x 730 h was 0.0071 h short)
    assert how.startswith("2.7738 nodes on average") and "schedules" in how


def test_no_schedule_is_the_desired_capacity():
    assert usage.schedule_average(3, [])[0] == 3


def test_date_dependent_cron_falls_back_and_says_so():
    avg, how = usage.schedule_average(2, [("0 1 1 * *", 4)])
    assert avg == 2 and "replicas_average" in how


def test_cron_week_minutes():
    assert usage.cron_week_minutes("30 2 * * 0") == [6 * 1440 + 150]  # Sunday is the last day of a Monday-based week
    assert len(usage.cron_week_minutes("0 */6 * * *")) == 28


def test_layers_and_unknown_keys(tmp_path):
    f = tmp_path / "u.yaml"
    f.write_text("lb_egress_gb: 10\nnat_egress_gb: null\n")
    u = usage.load("alicloud-cn-hangzhou-prod", str(f))
    assert u.lb_egress_gb == 10 and u.nat_egress_gb is None
    assert u.files == ("cost/usage/alicloud-cn-hangzhou-prod.yaml", str(f))
    f.write_text("lb_egres_gb: 10\nnat_cu_hours: -1\n")
    with pytest.raises(UserError) as exc:
        usage.load(None, str(f))
    text = str(exc.value)
    assert "did you mean 'lb_egress_gb'" in text and "nat_cu_hours: must be a number >= 0" in text


@pytest.mark.parametrize("value", ["0", "5", "729.99"])
def test_nat_cu_hours_below_the_documented_minimum_is_refused(tmp_path, capsys, value):
    """5 CU-hours was priced (1.15 CNY a month) though the gateway is billed at least 1 CU each hour (730 a month)."""
    from gpufleet.cli import main

    f = tmp_path / "u.yaml"
    f.write_text(f"nat_cu_hours: {value}\n")
    with pytest.raises(SystemExit) as exc:
        main(["cost", "estimate", "-s", "alicloud-cn-hangzhou-prod", "--usage", str(f)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert f"{f}: nat_cu_hours: {value} is below the documented minimum of 730 (1 CU each hour): give at least 730" in err
    f.write_text("nat_cu_hours: 730\n")
    assert usage.load(None, str(f)).nat_cu_hours == 730


def test_a_value_that_is_no_number_is_shown_by_what_it_is(tmp_path):
    """An unquoted date was shown as Python's `datetime.date(2026, 1, 1)`, in the usage file and the budgets file."""
    from gpufleet.cost import teambudget

    f = tmp_path / "u.yaml"
    f.write_text("lb_egress_gb: 2026-01-01\nnat_egress_gb: [1]\n")
    with pytest.raises(UserError) as exc:
        usage.load(None, str(f))
    assert str(exc.value).splitlines() == [
        f"{f}: lb_egress_gb: must be a finite number, not a date (2026-01-01)",
        f"{f}: nat_egress_gb: must be a finite number, not a list",
    ]
    b = tmp_path / "budgets.yaml"
    b.write_text("budgets:\n  ml-platform: 2026-01-01\n  ai-dev: '1e'\n")
    with pytest.raises(UserError) as exc:
        teambudget.load(b)
    assert str(exc.value).splitlines() == [
        f"{b}: budgets.ml-platform: must be a number >= 0 (e.g. 60000), not a date (2026-01-01)",
        f"{b}: budgets.ai-dev: must be a number >= 0 (e.g. 60000), not '1e'",
    ]
