"""The fake cloud has no pricing API: `gpufleet catalog refresh` says so."""

from __future__ import annotations

from gpufleet.errors import Problem, UserError


def fetch(region, today, endpoint=None, protocol="https", image_id=None):
    raise UserError([Problem("--cloud", "fakecloud", "the fake cloud has no pricing API; prices come from `catalog build`")])
