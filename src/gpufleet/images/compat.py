"""Does a recipe's line fit together, and does it serve a GPU kind? Pure functions over compat.yaml.

Each problem is (field path, message) with the clash named: which pin, which rule, which source.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from gpufleet import inputs
from gpufleet.errors import UserError
from gpufleet.images.pylock import lock_pins
from gpufleet.images.recipes import load_recipe, recipe_names
from gpufleet.stacks import catalog

RULES = Path(__file__).parent / "compat.yaml"


@lru_cache(maxsize=1)
def rules() -> dict:
    return inputs.load_mapping(RULES, "images/compat.yaml")


def _cc(text: str) -> tuple[int, int]:
    major, minor = str(text).split(".")
    return int(major), int(minor)


def _major(version: str) -> int:
    return int(str(version).split(".")[0])


def _py_in(python: str, spec: str) -> bool:
    """Python "3.12" against a Requires-Python like ">=3.9,<3.13" (only >=, <, <= and == used by these rows)."""
    have = tuple(int(x) for x in python.split(".")[:2])
    for clause in spec.split(","):
        m = re.fullmatch(r"\s*(>=|<=|<|>|==)\s*(\d+)\.(\d+)\s*", clause)
        if not m:
            continue
        op, want = m.group(1), (int(m.group(2)), int(m.group(3)))
        ok = {">=": have >= want, "<=": have <= want, "<": have < want, ">": have > want, "==": have == want}[op]
        if not ok:
            return False
    return True


def recipe_problems(recipe) -> list[tuple[str, str]]:
    """Clashes inside the recipe's own line and against every GPU kind it claims.

    A recipe that claims no GPU kind (the runner self-test) has no GPU line to check.
    """
    if not recipe.gpus:
        return []
    r = rules()
    out: list[tuple[str, str]] = []
    pins = recipe.pins
    cuda_major = recipe.cuda_major
    driver_major = _major(pins["driver"])

    need = r["driver_min_by_cuda_major"]["rows"].get(cuda_major)
    if need is None:
        out.append(("recipe.pins.cuda", f"CUDA {pins['cuda']}: no driver rule for CUDA {cuda_major} in images/compat.yaml"))
    elif driver_major < need:
        out.append(
            (
                "recipe.pins.driver",
                f"driver {pins['driver']} is below {need}, which CUDA {cuda_major} (pins.cuda {pins['cuda']}) needs "
                f"[{r['driver_min_by_cuda_major']['source']}]",
            )
        )

    line = r["vllm_lines"].get(pins["vllm"])
    if line is None:
        out.append(
            (
                "recipe.pins.vllm",
                f"vllm {pins['vllm']} has no row in images/compat.yaml vllm_lines; add the torch and CUDA its PyPI metadata pins",
            )
        )
    else:
        if pins["torch"] != line["torch"]:
            out.append(
                (
                    "recipe.pins.torch",
                    f"is {pins['torch']}, but vllm {pins['vllm']} requires torch=={line['torch']} [{line['source']}]",
                )
            )
        if cuda_major != line["cuda_major"]:
            out.append(
                (
                    "recipe.pins.cuda",
                    f"is {pins['cuda']}, but the torch {line['torch']} wheels of vllm {pins['vllm']} carry the CUDA "
                    f"{line['cuda_major']} runtime [{line['source']}]",
                )
            )
        if not _py_in(pins["python"], line["requires_python"]):
            out.append(
                (
                    "recipe.pins.python",
                    f"Python {pins['python']} is outside vllm {pins['vllm']} Requires-Python {line['requires_python']}",
                )
            )

    min_cc = r["min_cc_by_cuda_major"]["rows"].get(cuda_major)
    if min_cc:
        dead = [a for a in recipe.torch_cuda_archs if _cc(a) < _cc(min_cc)]
        if dead:
            out.append(
                (
                    "recipe.torch_cuda_archs",
                    f"lists {', '.join(dead)}, which CUDA {cuda_major} no longer builds for (minimum {min_cc})",
                )
            )

    for i, pkg in enumerate(recipe.apt_packages):
        m = re.match(r"nvidia-driver-(\d+)", pkg.name)
        if not m:
            continue
        if int(m.group(1)) != driver_major:
            out.append(
                (f"recipe.apt_packages.{i}.name", f"{pkg.name} is the {m.group(1)} branch, but pins.driver is {pins['driver']}")
            )
        if pkg.version is None:
            continue  # not yet known: a blocker of a real build (steps.build_blockers), not a clash
        upstream = pkg.version.split(":", 1)[-1].rsplit("-", 1)[0]
        if upstream != pins["driver"]:
            out.append(
                (f"recipe.apt_packages.{i}.version", f"{pkg.version} is driver {upstream}, but pins.driver is {pins['driver']}")
            )

    kinds = catalog.gpu_kinds()
    for i, name in enumerate(recipe.gpus):
        if name not in kinds:
            continue  # refused when the recipe loads (recipes.Recipe._gpu_kinds)
        out += [(f"recipe.gpus.{i}", f"{name}: {msg}") for msg in gpu_clashes(recipe, kinds[name])]
    if "bfloat16" in recipe.dtypes:
        bf16 = r["bf16_min_cc"]["value"]
        low = [g for g in recipe.gpus if g in kinds and kinds[g].cc < _cc(bf16)]
        if low and len(low) == len(recipe.gpus):
            out.append(("recipe.dtypes", f"bfloat16 needs compute capability >= {bf16}; none of {', '.join(low)} has it"))
    return out


def gpu_clashes(recipe, gpu) -> list[str]:
    """Why this recipe cannot run on this GPU kind (empty when it can). The recipe's claim list is not consulted."""
    if missing := [k for k in ("driver", "cuda", "torch") if k not in recipe.pins]:
        return [f"it pins no {', '.join(missing)}, which a recipe serving a GPU needs"]
    r = rules()
    out: list[str] = []
    cuda_major = recipe.cuda_major
    min_cc = r["min_cc_by_cuda_major"]["rows"].get(cuda_major)
    if min_cc and gpu.cc < _cc(min_cc):
        out.append(
            f"compute capability {gpu.compute_capability} ({gpu.architecture}) is not supported by CUDA {cuda_major} "
            f"(minimum {min_cc}) [{r['min_cc_by_cuda_major']['source']}]"
        )
    if recipe.torch_cuda_archs and not any(_cc(a)[0] == gpu.cc[0] and _cc(a) <= gpu.cc for a in recipe.torch_cuda_archs):
        out.append(
            f"torch {recipe.pins['torch']} ships no kernels for sm_{gpu.cc[0]}{gpu.cc[1]} (it targets {', '.join(recipe.torch_cuda_archs)}) "
            f"[{recipe.torch_cuda_archs_source or 'recipe.torch_cuda_archs'}]"
        )
    last = r["last_driver_branch_by_max_cc"]
    if gpu.cc < _cc(last["below_cc"]) and _major(recipe.pins["driver"]) > last["last_branch"]:
        out.append(
            f"driver {recipe.pins['driver']} is newer than R{last['last_branch']}, the last branch for {gpu.architecture} [{last['source']}]"
        )
    open_min = r["open_kernel_modules_min_cc"]["value"]
    for pkg in recipe.apt_packages:
        if pkg.name.startswith("nvidia-driver-") and "-open" in pkg.name and gpu.cc < _cc(open_min):
            out.append(
                f"{pkg.name} is the open kernel module, which needs compute capability >= {open_min} [{r['open_kernel_modules_min_cc']['source']}]"
            )
    return out


def dtype_clash(dtype: str, gpu) -> str | None:
    bf16 = rules()["bf16_min_cc"]["value"]
    if dtype == "bfloat16" and gpu.cc < _cc(bf16):
        return f"bfloat16 needs compute capability >= {bf16}; {gpu.name} has {gpu.compute_capability} (use float16)"
    return None


def recipes_serving(gpu_name: str) -> list[str]:
    """The recipes that serve the GPU kind, for a hint only: one that does not load is left out (its own load names
    it; here it took the place of the problem the hint is for)."""
    out = []
    for name in recipe_names():
        try:
            if gpu_name in load_recipe(name).gpus:
                out.append(name)
        except UserError:
            continue
    return out


def lock_problems(recipe, lock_text: str) -> list[tuple[str, str]]:
    """The recipe's hash lock must pin the recipe's vllm and torch, and a CUDA runtime of the recipe's CUDA major."""
    if not recipe.python_lock:
        return []
    pinned = lock_pins(lock_text)
    out = []
    for pkg in ("vllm", "torch"):
        if pkg not in recipe.pins:
            out.append(("recipe.python_lock", f"the recipe pins no {pkg} to check {recipe.python_lock} against: add pins.{pkg}"))
        elif pinned.get(pkg, "").split("+", 1)[0] != recipe.pins[pkg]:  # torch's +cu130 cut, as the step's check cuts it
            out.append(
                (
                    "recipe.python_lock",
                    f"{recipe.python_lock} pins {pkg} {pinned.get(pkg, '(none)')}, the recipe {recipe.pins[pkg]}; regenerate it",
                )
            )
    runtimes = {k: v for k, v in pinned.items() if k.startswith("nvidia-cuda-runtime")}
    majors = {int(v.split(".")[0]) for v in runtimes.values()}
    if runtimes and "cuda" in recipe.pins and majors != {recipe.cuda_major}:
        out.append(
            (
                "recipe.pins.cuda",
                f"is {recipe.pins['cuda']}, but {recipe.python_lock} installs "
                f"{', '.join(f'{k}=={v}' for k, v in sorted(runtimes.items()))}",
            )
        )
    return out  # a requirement without a hash: refused when the lock is read (steps.python_lock_text)
