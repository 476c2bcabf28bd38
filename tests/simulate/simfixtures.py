"""Shared by the simulation tests: the start of the step trace."""

from datetime import UTC, datetime

# a weekday evening in UTC: no shipped schedule fires during the 5-hour step trace (prod's fire at 01:00 and 14:00 UTC)
START = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)
