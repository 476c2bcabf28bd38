"""Which vLLM release serves a model's architecture: sizing/data/vllm_architectures.json, read from each release's
model registry (scripts/vllm_registry_snapshot.py), and what vLLM says when it does not; and which of them it refuses to
split over pipeline-parallel stages.

vLLM takes config.json's `architectures` and serves the model if it lists any of them (ModelRegistry.inspect_model_cls);
from 0.8 it tries its Transformers backend for one it does not list, which runs only where transformers has the class
and it is compatible, so the answer there is unsure, not a refusal. Releases between two snapshots: an architecture in
the older one is served; one only in the newer one may or may not be (unsure)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from msgspec import Struct

from gpufleet.sizing.profiler import parse_version

DATA = Path(__file__).parent / "data" / "vllm_architectures.json"


class Support(Struct, frozen=True):
    refused: str | None = None  # vLLM's refusal, in its words, with the fix
    unsure: str | None = None  # why it may not serve it (the verdict is then at best "tight")


@cache
def releases() -> dict[str, dict]:
    return json.loads(DATA.read_text(encoding="utf-8"))["releases"]


def _around(v: tuple[int, ...]) -> tuple[str | None, str | None]:
    """(the newest release read at or before version `v`, the first read after it); None where there is none."""
    known = sorted(releases(), key=parse_version)
    older = [r for r in known if parse_version(r) <= v]
    return (older[-1] if older else None), next((r for r in known if parse_version(r) > v), None)


NOT_CHECKED = (
    "the model names no architectures (config.json's `architectures`), so whether vLLM {version} serves it, and "
    "splits it over pipeline stages, was not checked against its model registry"
)


@cache  # asked for every sizing of a stack (its advice sizes many variants of the same model and version)
def support(architectures: tuple[str, ...], version: str) -> Support:
    """Whether vLLM `version` serves a model whose config.json lists `architectures` (a version not known exactly: no
    answer; no architectures known, as a GGUF file's config: unsure, the check not made)."""
    v = parse_version(version)
    if len(v) < 2:
        return Support()
    if not architectures:
        return Support(unsure=NOT_CHECKED.format(version=version))
    older, nxt = _around(v)
    archs = list(architectures)
    if older and any(a in releases()[older]["generate"] for a in archs):
        return Support()
    exact = older is not None and parse_version(older) == v
    if not exact and nxt and any(a in releases()[nxt]["generate"] for a in archs):
        missing = f", not {older}" if older else ""
        return Support(unsure=f"vLLM {version} may not serve {archs[0]}: of the registries read, {nxt}'s lists it{missing}")
    if older is None:
        oldest = min(releases(), key=parse_version)
        return Support(unsure=f"vLLM {version} is older than the oldest release whose registry was read ({oldest})")
    base = releases()[older]
    gone = next((a for a in archs if a in base["previously_supported"]), None)
    if gone:
        return Support(
            refused=f"Model architecture {gone} was supported in vLLM until v{base['previously_supported'][gone]}, and is "
            "not supported anymore. (vLLM refuses to start; use that release or older)"
        )
    if base["transformers_fallback"]:
        return Support(
            unsure=f"{archs[0]} is not in vLLM {older}'s registry: vLLM serves it only through its Transformers "
            "backend, where transformers has the class and it is compatible"
        )
    return Support(
        refused=f"Model architectures {archs} are not supported for now. (vLLM {version} refuses to start: its registry "
        f"({older}) lists {len(base['generate'])} architectures, not this one; use a release that serves it)"
    )


def quantization_refusal(method: str, version: str, ours: bool = False) -> str | None:
    """vLLM's refusal of a quantization method that release does not take (`quantization_methods` of the newest
    registry read at or before it: ModelConfig._verify_quantization, "Unknown quantization method"), or None. `ours`: a
    name of this tool's format table, refused only if some release read takes it (a name of ours alone is not vLLM's);
    a checkpoint's quant_method is refused whenever the release does not list it."""
    v = parse_version(version)
    older, nxt = _around(v)
    if older is None or len(v) < 2:
        return None
    taken = releases()[older]["quantization_methods"]
    if method in taken:
        return None
    takes = [r for r, e in releases().items() if method in e["quantization_methods"]]
    if ours and not takes:
        return None
    if parse_version(older) != v and nxt and method in releases()[nxt]["quantization_methods"]:
        return None  # a release between the two read: the newer one takes it, so this one may
    fix = (
        f"vLLM {max(takes, key=parse_version)} is the newest release read that takes it" if takes else "no release read takes it"
    )
    return (
        f"Unknown quantization method: {method}. Must be one of {taken}. (vLLM {version} refuses to start: its "
        f"quantization methods ({older}) do not list it; {fix})"
    )


PP_REFUSAL = "Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` interface."
# vLLM's words (ModelConfig.verify_with_parallel_config, the same from 0.6.3 to 0.33.0)


@cache
def pipeline_refusal(architectures: tuple[str, ...], version: str, pipeline_parallel: int) -> str | None:
    """vLLM's refusal of a pipeline-parallel size above 1 for an architecture whose class does not implement SupportsPP
    (`no_pipeline_parallel` of the registry read), where the registries around `version` agree; else None."""
    v = parse_version(version)
    if pipeline_parallel <= 1 or not architectures or len(v) < 2:
        return None
    older, nxt = _around(v)
    if older is None:
        return None
    base = releases()[older]
    served = next((a for a in architectures if a in base["generate"]), None)
    if served is None or served not in base["no_pipeline_parallel"]:
        return None
    if parse_version(older) != v and nxt and served not in releases()[nxt]["no_pipeline_parallel"]:
        return None  # a release between the two read: the newer one supports it, so this one may
    return (
        f"{PP_REFUSAL} (vLLM {version} refuses to start: {served}'s class in its registry ({older}) does not; "
        "split the model with tensor parallel instead)"
    )
