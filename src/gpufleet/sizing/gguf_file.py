"""A GGUF file as the sizing model sees it: the architecture from its metadata and the weight bytes from its tensors.

Read with the `gguf` package's reader (the llama.cpp project's own), metadata only: GGUFReader maps the file and
parses the header, key-values and tensor infos; tensor data is not read. Each tensor's bytes are its element count
over the block size times the block's bytes for its type (gguf.GGML_QUANT_SIZES), which is what the file stores
and what vLLM's GGUF loader keeps on the GPU (quantized weights stay quantized, vllm/model_executor/layers/
quantization/gguf.py). `import gguf` (with numpy) costs about 0.8 s, so it is imported only for a .gguf path.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from gpufleet import inputs
from gpufleet.errors import Problem, UserError

TRANSFORMERS = Path(__file__).parent / "data" / "gguf_transformers.yaml"

# GGUF architecture -> (transformers model_type, its key names: {arch}.<key>)
ARCH_TYPES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "deepseek2": "deepseek_v2",
}


# transformers model_type -> the class vLLM names as the GGUF model's architecture: vLLM's get_config sets a GGUF file's
# `architectures` to [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config.model_type]] (vllm/transformers_utils/config.py, "Special
# architecture mapping check for GGUF models", the same in every release read); the names are transformers' own
# (models/auto/modeling_auto.py; tests/sizing/test_models.py checks them against the installed transformers). A
# model_type not here: its architectures are not known, and plan fit says the registry check was not made.
CAUSAL_LM = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen2_moe": "Qwen2MoeForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "gemma": "GemmaForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM",
}


def _value(reader, key: str, shown: str):
    field = reader.fields.get(key)
    if field is None:
        return None
    try:
        value = field.contents()
        return value.decode() if isinstance(value, bytes) else value
    except UnicodeDecodeError:  # GGUF strings are UTF-8: a corrupt file's were a traceback
        raise UserError([Problem(shown, key, "holds text that is not UTF-8: the GGUF file is corrupt")]) from None


# The fixed header: magic, version (uint32), tensor count, key-value count (uint64). Each tensor info takes at least 24
# bytes (name length, dimension count, type, offset) and each key-value at least 13 (key length, type, a 1-byte value).
HEADER = 24
# The metadata every model GGUF carries under its architecture's prefix (llama.cpp's converter writes them for each
# architecture; llama.cpp's loader fails without them).
REQUIRED = ("block_count", "embedding_length", "attention.head_count")
MIN_TENSOR_INFO, MIN_KEY_VALUE = 24, 13


def _header_problem(path: Path, size: int) -> str | None:
    """Counts in the header that the file cannot hold (a corrupt header). GGUFReader walks a count of 2**40 tensor infos
    through a large file's zero bytes for hours instead of failing."""
    with open(path, "rb") as f:
        head = f.read(HEADER)
    if len(head) < HEADER or head[:4] != b"GGUF":
        return None  # GGUFReader says what is wrong
    big = int.from_bytes(head[4:8], "little") & 0xFFFF == 0  # the byte order, as GGUFReader detects it
    tensors, kvs = (int.from_bytes(head[i : i + 8], "big" if big else "little") for i in (8, 16))
    if HEADER + tensors * MIN_TENSOR_INFO + kvs * MIN_KEY_VALUE > size:
        return f"its header counts {tensors} tensors and {kvs} metadata keys, more than its {size} bytes can hold"
    return None


def read(path: Path) -> tuple[dict, float, str, str]:
    """(config.json-style fields from the metadata, bytes of all tensors, the model's name, the file's
    general.architecture). models.resolve builds the ModelArch from them (this module stays below models in the import
    graph)."""
    shown = str(path)
    if not os.path.isfile(path):  # Path.is_file raises on a name of > 255 bytes (ENAMETOOLONG)
        raise UserError([Problem(shown, "", "no such GGUF file")])
    try:
        if why := _header_problem(path, os.path.getsize(path)):
            raise ValueError(why)
        # deferred: gguf (numpy): only a .gguf model is read with it
        from gguf import GGML_QUANT_SIZES, GGUFReader

        reader = GGUFReader(path, "r")
    except (ValueError, OSError, KeyError, IndexError) as e:  # not a GGUF file, truncated, unknown version
        raise UserError([Problem(shown, "", f"not a readable GGUF file (truncated or corrupt?): {e}")]) from None
    arch = _value(reader, "general.architecture", shown)
    if not isinstance(arch, str):
        raise UserError([Problem(shown, "general.architecture", "missing; is this a model GGUF file?")])

    def key(name: str, default=None):
        v = _value(reader, f"{arch}.{name}", shown)
        return default if v is None else v

    total = 0
    vocab = None
    for t in reader.tensors:
        block, size = GGML_QUANT_SIZES[t.tensor_type]
        total += int(t.n_elements) // block * size
        if t.name == "token_embd.weight":
            vocab = int(t.shape[-1]) if len(t.shape) > 1 else None
    missing = [f"{arch}.{name}" for name in REQUIRED if key(name) is None]
    if missing:  # llama.cpp refuses such a file ("key not found in model"); sizing it took the architecture's defaults
        raise UserError(
            [
                Problem(
                    shown,
                    ", ".join(missing),
                    "missing from the GGUF metadata: a model file carries its layer count, width and attention heads "
                    "(llama.cpp and vLLM read them); is this a complete model file?",
                )
            ]
        )
    hidden = key("embedding_length")
    heads = key("attention.head_count")
    tokens = _value(reader, "tokenizer.ggml.tokens", shown)
    model_type = ARCH_TYPES.get(arch, arch)
    cfg = {
        "model_type": model_type,
        "architectures": [CAUSAL_LM[model_type]] if model_type in CAUSAL_LM else None,
        "num_hidden_layers": key("block_count"),
        "hidden_size": hidden,
        "intermediate_size": key("feed_forward_length"),
        "num_attention_heads": heads,
        "num_key_value_heads": key("attention.head_count_kv", heads),
        "head_dim": key("attention.key_length"),
        "max_position_embeddings": key("context_length"),
        "vocab_size": vocab or (len(tokens) if isinstance(tokens, list) else None),
        "tie_word_embeddings": not any(t.name == "output.weight" for t in reader.tensors),
        "torch_dtype": "float16",
    }
    if key("expert_count"):
        cfg |= {
            "num_experts": key("expert_count"),
            "num_experts_per_tok": key("expert_used_count", 0),
            "moe_intermediate_size": key("expert_feed_forward_length", cfg["intermediate_size"]),
            # DeepSeek's dense first layers and shared experts, Qwen2-MoE's shared expert: without them the
            # architecture's transformers defaults stood in (DeepSeek-V3 in GGUF: 0 dense layers and 2 shared experts
            # for its 3 and 1)
            "first_k_dense_replace": key("leading_dense_block_count"),
            "n_shared_experts": key("expert_shared_count"),
            "shared_expert_intermediate_size": key("expert_shared_feed_forward_length"),
        }
    if key("attention.kv_lora_rank"):
        # llama.cpp's converter (DeepseekV2Model.set_gguf_parameters) writes the cached latent's widths under
        # key_length (kv_lora_rank + rope) and value_length (kv_lora_rank), and the per-head widths under the _mla
        # keys; files written before those keys have the per-head widths under the plain keys
        k_head = key("attention.key_length_mla", key("attention.key_length"))
        cfg |= {
            "kv_lora_rank": key("attention.kv_lora_rank"),
            "q_lora_rank": key("attention.q_lora_rank", 0),
            "qk_rope_head_dim": key("rope.dimension_count"),
            "qk_nope_head_dim": (k_head or 0) - (key("rope.dimension_count") or 0),
            "v_head_dim": key("attention.value_length_mla", key("attention.value_length")),
        }
    cfg = {k: v for k, v in cfg.items() if v is not None}
    return cfg, float(total), str(_value(reader, "general.name", shown) or path.stem), arch


REFUSED = "GGUF model with architecture "  # how the refusal starts (data/gguf_transformers.yaml `refusal`)


@cache
def _transformers() -> dict:
    return inputs.load_mapping(TRANSFORMERS, "sizing/data/gguf_transformers.yaml")


def transformers_refuses(arch: str, release: str) -> bool | None:
    """Whether transformers `release` refuses to read the config of a GGUF file whose general.architecture is `arch`
    (load_gguf_checkpoint's check, data/gguf_transformers.yaml); None: a release not read."""
    row = _transformers()["releases"].get(release)
    if row is None:
        return None
    renamed = next((to for part, to in row["renames"].items() if part in arch), arch)
    return arch not in row["architectures"] and renamed not in row["architectures"]


def config_check(arch: str, vllm_version: str, transformers: str | None) -> tuple[str | None, str | None]:
    """(vLLM's refusal, why the verdict is unsure) for reading a GGUF file's config: vLLM reads it through transformers
    (data/gguf_transformers.yaml), the release the image recipe pinning `vllm_version` installs (`transformers`; None:
    not known)."""
    fix = "give --hf-config-path with the original model's repository (vLLM reads the config there, not from the file)"
    refused = transformers_refuses(arch, transformers) if transformers else None
    if refused:
        said = _transformers()["refusal"].format(arch=arch)
        return (
            f"{said} (transformers {transformers}, which the image recipe pinning vLLM {vllm_version} installs, "
            f"reads a GGUF file's config for vLLM, which does not start; {fix})"
        ), None
    if refused is False:
        return None, None
    read = list(_transformers()["releases"])
    refusing = [r for r in read if transformers_refuses(arch, r)]
    if not refusing:
        return None, None
    which = (
        f"every transformers release read ({read[0]} to {read[-1]})"
        if refusing == read
        else f"transformers {', '.join(refusing)}"
    )
    known = f"transformers {transformers} is not a release read" if transformers else "its transformers is not known"
    return None, (
        f"vLLM reads a GGUF file's config through transformers, and {which} refuses architecture {arch!r} ({known}; "
        f"data/gguf_transformers.yaml); if yours does, {fix}"
    )
