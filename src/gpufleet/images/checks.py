"""Stack checks owned by the images module: does the stack's image recipe serve its GPU kind?

Called by stack validation (`gpufleet preview`) with a loaded Fleet. Problems, as (field path, message):
- the recipe does not exist or does not load;
- the recipe's own line is inconsistent (driver vs CUDA, torch vs vLLM, ...; see compat.py);
- the stack's GPU kind is not among the recipe's claimed GPUs, or clashes with its CUDA / torch build;
- the stack's dtype is not supported by its GPU;
- the lock entry's recorded pins differ from the recipe's pins.
A placeholder lock entry (no image built yet) records no pins; it yields no problem here: the preview shows
its image id, which says `placeholder`, and `gpufleet image lock show` lists it as such. A built entry that records
no pins is refused when the stack is loaded (stacks/lock.py unrecorded_problem).
"""

from __future__ import annotations

from gpufleet.errors import UserError
from gpufleet.images import compat
from gpufleet.images.recipes import fleet_recipe


def spec_problems(fleet) -> list[tuple[str, str]]:
    """(field path, message) for each clash between the fleet and its image recipe."""
    name = fleet.spec.image.recipe
    try:
        recipe = fleet_recipe(fleet.spec)
    except UserError as exc:  # named with the recipe's file (and field), as a preview names them
        return [("fleet.image.recipe", "; ".join(str(p) for p in exc.problems))]
    out: list[tuple[str, str]] = []
    inner = compat.recipe_problems(recipe)
    if inner:
        out.append(("fleet.image.recipe", f"recipe {name} is inconsistent: " + "; ".join(f"{p}: {m}" for p, m in inner)))
    gpu = fleet.gpu
    if gpu.name not in recipe.gpus:
        others = [n for n in compat.recipes_serving(gpu.name) if n != name]  # every recipe read, for the hint only
        hint = f"; use {' or '.join(others)}" if others else ""
        clashes = compat.gpu_clashes(recipe, gpu)
        why = f": {'; '.join(clashes)}" if clashes else ""
        out.append(
            ("fleet.image.recipe", f"recipe {name} does not serve {gpu.name} (it serves {', '.join(recipe.gpus)}){why}{hint}")
        )
    dtype = fleet.spec.serving.dtype
    clash = compat.dtype_clash(dtype, gpu)
    if clash:
        out.append(("fleet.serving.dtype", clash))
    elif dtype != "auto" and recipe.dtypes and {"half": "float16"}.get(dtype, dtype) not in recipe.dtypes:  # half: vLLM's alias
        out.append(("fleet.serving.dtype", f"{dtype} is not among the dtypes recipe {name} serves ({', '.join(recipe.dtypes)})"))
    recorded = fleet.image_pins or {}
    if recorded:
        diff = [
            f"{k}: image has {recorded.get(k, '(none)')}, recipe pins {recipe.pins.get(k, '(none)')}"
            for k in sorted(set(recorded) | set(recipe.pins))
            if recorded.get(k) != recipe.pins.get(k)
        ]
        if diff:
            out.append(
                (
                    "fleet.image.recipe",
                    f"the locked image {fleet.image_id} was built with other pins than recipe {name} "
                    f"({'; '.join(diff)}); rebuild it with `gpufleet image build --recipe {name} ...`",
                )
            )
    return out
