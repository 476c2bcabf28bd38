"""The fake cloud's provider contract: no rules (a new cloud starts here and adds each rule with its citation)."""

from __future__ import annotations

RULES: tuple = ()
NAMES: dict[str, tuple] = {"tag_key": (), "tag_value": (), "secret_name": (), "bucket_name": (), "user_data": ()}
CRON_ZONE_HOURS = 0  # the fake provider reads schedule times in UTC
DOCSTRING_OVERRIDES: dict = {}
GAPS: dict[str, str] = {}  # hardening the fake provider cannot declare: none
