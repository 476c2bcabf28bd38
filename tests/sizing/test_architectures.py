"""Which vLLM release serves an architecture (sizing/architectures.py over sizing/data/vllm_architectures.json, read
from each release's model registry by scripts/vllm_registry_snapshot.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from msgspec.structs import replace

from gpufleet.sizing import architectures, fit, models, profiler
from gpufleet.stacks.catalog import gpu_kinds

ROOT = Path(__file__).resolve().parents[2]
A100 = gpu_kinds()["A100-80G"]


def _script():
    spec = importlib.util.spec_from_file_location("vllm_registry_snapshot", ROOT / "scripts" / "vllm_registry_snapshot.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("vllm_registry_snapshot", module)
    spec.loader.exec_module(module)
    return module


def test_every_pinned_release_has_its_registry_read():
    """The images' pins are read exactly, not between two snapshots."""
    assert set(profiler.pins()) <= set(architectures.releases())
    for entry in architectures.releases().values():
        assert entry["source"].startswith("https://pypi.org/project/vllm/") and len(entry["registry_sha256"]) == 64


def test_the_generator_reads_dict_literals_without_importing_vllm():
    gen = _script()
    source = 'A = 1\n_TEXT_GENERATION_MODELS = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM"), **{}}\nX: dict = {"k": 1}\n'
    found = gen.dict_literals(source)
    assert set(found) == {"_TEXT_GENERATION_MODELS", "X"} and gen.string_keys(found["_TEXT_GENERATION_MODELS"]) == [
        "LlamaForCausalLM"
    ]


def test_a_release_that_does_not_list_the_architecture_refuses_it_in_vllms_words():
    qwen3 = models.catalog()["Qwen/Qwen3-30B-A3B"]
    r = fit.measure(qwen3, A100, fit.Serving(vllm_version="0.6.3", max_model_len=4096))
    assert r.verdict == "does not fit"
    assert any(p.startswith("Model architectures ['Qwen3MoeForCausalLM'] are not supported for now.") for p in r.problems)


def test_between_two_registries_read_an_architecture_only_the_newer_lists_is_unsure():
    qwen3 = models.catalog()["Qwen/Qwen3-30B-A3B"]
    r = fit.measure(qwen3, A100, fit.Serving(vllm_version="0.8.2", max_model_len=4096))
    assert r.verdict == "tight" and r.fits
    assert any("vLLM 0.8.2 may not serve Qwen3MoeForCausalLM" in a for a in r.assumptions)
    assert fit.measure(qwen3, A100, fit.Serving(vllm_version="0.8.5", max_model_len=4096)).verdict == "fits"


def test_an_unlisted_architecture_is_refused_before_the_transformers_backend_and_unsure_after():
    assert architectures.support(("FooForCausalLM",), "0.7.1").refused is not None
    assert architectures.support(("FooForCausalLM",), "0.7.1").refused.startswith("Model architectures ['FooForCausalLM']")
    later = architectures.support(("FooForCausalLM",), "0.33.0")
    assert later.refused is None and "Transformers backend" in (later.unsure or "")


def test_an_architecture_a_release_dropped_is_refused_with_the_last_release_that_served_it():
    newest = max(architectures.releases(), key=profiler.parse_version)
    gone, until = next(iter(architectures.releases()[newest]["previously_supported"].items()))
    refused = architectures.support((gone,), newest).refused
    assert refused is not None and refused.startswith(f"Model architecture {gone} was supported in vLLM until v{until}")


def test_unknown_versions_give_no_answer():
    assert architectures.support(("LlamaForCausalLM",), "V1 (2026-08)") == architectures.Support()


def test_a_model_without_architectures_is_not_passed_silently():
    """No architectures known (a GGUF file's config): the registry check is not made, and the result says so and is at
    best "tight" (docs/sizing.md: where the model is unsure the verdict is at best tight, with the reasons)."""
    said = architectures.support((), "0.33.0").unsure
    assert said is not None and "was not checked against its model registry" in said and "vLLM 0.33.0" in said
    nameless = replace(models.catalog()["meta-llama/Llama-3.1-8B-Instruct"], architectures=())
    r = fit.measure(nameless, A100, fit.Serving(vllm_version="0.7.1", max_model_len=4096))
    assert r.verdict == "tight" and any("was not checked against its model registry" in a for a in r.assumptions)


def test_catalog_models_of_one_architecture_get_the_same_registry_answer():
    """Qwen3-235B-A22B and Qwen3-30B-A3B are both Qwen3MoeForCausalLM, which the 0.7.1 registry does not list; glm-4-9b-chat
    is ChatGLMModel (its published config.json), whose 0.6.3 class does not implement SupportsPP (docs/sizing.md)."""
    catalog = models.catalog()
    for name in ("Qwen/Qwen3-235B-A22B", "Qwen/Qwen3-30B-A3B"):
        r = fit.measure(catalog[name], A100, fit.Serving(gpus=8, vllm_version="0.7.1", max_model_len=8192))
        assert r.verdict == "does not fit", name
        assert any(p.startswith("Model architectures ['Qwen3MoeForCausalLM'] are not supported for now.") for p in r.problems)
    a10 = gpu_kinds()["A10"]
    glm = fit.measure(
        catalog["THUDM/glm-4-9b-chat"], a10, fit.Serving(pipeline_parallel=2, vllm_version="0.6.3", max_model_len=8192)
    )
    assert glm.verdict == "does not fit" and any(p.startswith(architectures.PP_REFUSAL) for p in glm.problems)


def test_the_generator_follows_a_class_to_supports_pp_through_bases_and_imports():
    """SupportsPP found on the class, through a base of the same module, through a base imported from another model
    module; a class with no such base is False, one whose module the wheel lacks is unknown (None)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("vllm/model_executor/models/a.py", "class Base(nn.Module, SupportsPP): ...\nclass A(Base): ...\n")
        z.writestr(
            "vllm/model_executor/models/b.py", "from .a import Base\nclass B(Base, SupportsLoRA): ...\nclass C(nn.Module): ...\n"
        )
        z.writestr("vllm/models/d.py", "from vllm.model_executor.models.b import C\nclass D(C): ...\n")
    gen = _script()
    mods = gen.Modules(zipfile.ZipFile(buf))
    m = "vllm.model_executor.models"
    assert gen.supports_pp(mods, f"{m}.a", "A") is True and gen.supports_pp(mods, f"{m}.b", "B") is True
    assert gen.supports_pp(mods, f"{m}.b", "C") is False and gen.supports_pp(mods, "vllm.models.d", "D") is False
    assert gen.supports_pp(mods, f"{m}.missing", "X") is None


def test_pipeline_parallel_is_refused_in_vllms_words_for_an_architecture_without_supports_pp():
    """Read from the wheels: ChatGLM's class in 0.6.3 does not implement SupportsPP (chatglm.py ChatGLMForCausalLM(nn.Module,
    SupportsLoRA, SupportsMultiModal)); Llama's does in every release read."""
    refusal = architectures.pipeline_refusal(("ChatGLMModel",), "0.6.3", 2)
    assert refusal is not None and refusal.startswith(architectures.PP_REFUSAL) and "ChatGLMModel" in refusal
    assert architectures.pipeline_refusal(("ChatGLMModel",), "0.6.3", 1) is None
    for v in architectures.releases():
        assert architectures.pipeline_refusal(("LlamaForCausalLM",), v, 2) is None
        assert "LlamaForCausalLM" not in architectures.releases()[v]["no_pipeline_parallel"]
    chatglm = replace(models.catalog()["meta-llama/Llama-3.1-8B-Instruct"], architectures=("ChatGLMModel",))
    r = fit.measure(chatglm, A100, fit.Serving(gpus=1, pipeline_parallel=2, vllm_version="0.6.3", max_model_len=4096))
    assert r.verdict == "does not fit" and any(p.startswith(architectures.PP_REFUSAL) for p in r.problems)
