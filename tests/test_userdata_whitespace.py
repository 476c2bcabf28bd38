"""A value systemd's EnvironmentFile= would not take verbatim is refused before it is written: a space.

systemd.exec(5), EnvironmentFile=: "Leading and trailing whitespace (space, tab, carriage return) is discarded" from an
unquoted value: GPUFLEET_ROLE=gpufleet-node<space> would reach the prepare program as another role name than the one
the program created (components/userdata.py ENV_VALUE: "no quotes, backslashes, $ or whitespace to interpret").
"""

from pathlib import Path

import pytest

from gpufleet import validation
from gpufleet.components import userdata

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("role", ["gpufleet-dev-node ", " gpufleet-dev-node", "gpufleet dev node"])
def test_a_space_in_a_value_is_refused_naming_its_key(role):
    fleet = validation.load_fleet("alicloud-cn-hangzhou-dev", ROOT, sizing=False)
    with pytest.raises(ValueError, match="GPUFLEET_ROLE"):
        userdata.environment(fleet, role)
    assert userdata.environment(fleet, role.strip().replace(" ", "-"))["GPUFLEET_ROLE"] == role.strip().replace(" ", "-")
