"""What a spec must satisfy to be declared on the fake cloud."""

from __future__ import annotations

# The fake cloud publishes no quota: no LIST_CAPS, so no list of the spec is capped on it; and no notes() (the
# registry's defaults, registry.DEFAULTS).


def spec_problems(spec) -> list[tuple[str, str]]:
    if not spec.model.source.startswith(("fks://", "https://")):
        return [("fleet.model.source", f"{spec.model.source}: the fake cloud fetches fks:// or https:// only")]
    if spec.billing.model != "payg":
        return [("fleet.billing.model", "the fake cloud bills by the hour only (payg)")]
    return []
