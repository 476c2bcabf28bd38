"""Issue 15's cron and schedule cases, refused by stack validation with the field named."""

import copy
from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.errors import UserError
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]


def _raw():
    _, config = loader.read_stack_config("alicloud-cn-hangzhou-prod", ROOT)
    return copy.deepcopy(config[loader.CONFIG_KEY])


def _problems(raw) -> list[str]:
    with pytest.raises(UserError) as info:
        validation.validate(raw, stack="x", file="stacks/Pulumi.x.yaml")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    "cron, words",
    [
        ("61 25 * * *", "61 is outside 0-59"),
        ("a b c d e", "is not a number"),
        ("0 1 32 13 8", "32 is outside 1-31"),
        ("*/0 * * * *", "step"),
        ("0 1 * * *\n", "one line"),
        (" 0 1 * * *", "one line"),
        ("0 14 31 2 *", "never fires: none of the months 2 has a day 31"),  # a CronError traceback in preview
        ("0 14 31 2,4,6 *", "never fires: none of the months 2, 4, 6 has a day 31"),
    ],
)
def test_bad_cron_is_refused_naming_the_field(cron, words):
    raw = _raw()
    raw["autoscaling"]["schedules"][0]["cron"] = cron
    found = _problems(raw)
    assert any("fleet.autoscaling.schedules.0.cron:" in p and words in p for p in found), found


def test_duplicate_schedule_names_are_refused():
    raw = _raw()
    schedules = raw["autoscaling"]["schedules"]
    schedules[1]["name"] = schedules[0]["name"]
    found = _problems(raw)
    assert any("fleet.autoscaling:" in p and "unique" in p and schedules[0]["name"] in p for p in found), found
