"""A rate quoted today is accepted; only a date after today is refused.

cost/fx.py refuses a rate "after today" and asks for "the day the rate was quoted": a rate read off today's reference
(e.g. the PBOC central parity, published each business morning) is dated today.
"""

from datetime import timedelta

import pytest

from gpufleet.clock import now
from gpufleet.cost import fx
from gpufleet.errors import UserError


def test_todays_rate_is_accepted_and_tomorrows_refused():
    today = now().date()
    rate = fx.parse("USD", f"7.12@{today.isoformat()}")
    assert rate is not None and rate.as_of == today.isoformat()
    with pytest.raises(UserError, match="is after today"):
        fx.parse("USD", f"7.12@{(today + timedelta(days=1)).isoformat()}")
