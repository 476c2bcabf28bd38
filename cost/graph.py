"""The resource graph the program declares, from the offline preview (gpufleet.preview).

Cost never re-declares resources: it prices what `preview_stack` / `preview_spec` record.
"""

from __future__ import annotations

from gpufleet.errors import Problem, UserError


def _preview():
    try:
        from gpufleet import preview
    except ImportError:
        raise UserError(
            [Problem("gpufleet/preview.py", "", "the offline preview is not installed yet; cost needs its resource graph")]
        ) from None
    return preview


def _resources(inv) -> list[dict]:
    res = inv.resources if hasattr(inv, "resources") else inv["resources"]
    return [dict(r) for r in res]


def stack_resources(stack: str) -> list[dict]:
    return _resources(_preview().preview_stack(stack))


def spec_resources(raw: dict, stack: str) -> list[dict]:
    preview = _preview()
    if not hasattr(preview, "preview_spec"):
        raise UserError(
            [Problem("gpufleet/preview.py", "preview_spec", "missing: cost compare needs preview_spec(raw: dict, stack: str)")]
        )
    return _resources(preview.preview_spec(raw, stack))
