"""The time of the run, injectable: GPUFLEET_NOW (ISO 8601, e.g. 2026-12-01T00:00:00Z) fixes it for tests and goldens."""

from __future__ import annotations

import os
from datetime import UTC, datetime

ENV = "GPUFLEET_NOW"


def now() -> datetime:
    fixed = os.environ.get(ENV)
    if fixed:
        value = datetime.fromisoformat(fixed.replace("Z", "+00:00"))
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.now(UTC)
