"""Model architecture facts, read from a Hugging Face config.json the way vLLM reads it.

vLLM loads config.json through transformers' configuration class of its `model_type`, so a field the file leaves
out takes that architecture's default (Gemma ties its embeddings, Llama does not). Those defaults are a snapshot
(data/config_defaults.json, written by scripts/config_defaults_snapshot.py from transformers): importing
transformers and building AutoConfig takes 5.1-6.4 s here against 0.26-0.54 s for `import typer, pydantic`
(issue 25 allows `plan fit` 2x of that), so the snapshot is read instead of the package.

The sizing catalog is the config.json copies in data/configs/<org>--<name>.json (their card parameter counts in
data/configs/SOURCES.yaml) and the rows of data/models.yaml (a config.json's fields inline, with the card count).
Parameters are counted from the structure (modelled here, one function per part): attention (grouped-query or
MLA), dense or gated MLP, mixture-of-experts layers (routed and shared experts, dense first layers), norms,
embeddings and the LM head. KV cache per token comes from the same structure (MLA keeps one compressed latent).
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

from msgspec import Struct, field
from msgspec.structs import replace

from gpufleet import inputs
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.inputs import kind, number_problems, read_json_object

DATA = Path(__file__).parent / "data"
CATALOG = DATA / "models.yaml"
CONFIGS = DATA / "configs"
DEFAULTS = DATA / "config_defaults.json"

# Architectures whose structure this module models (their parameter count is not an estimate). Others are read
# with the generic decoder formula and said to be estimates ("tight" verdicts).
MODELLED = {
    "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "chatglm", "glm", "glm4",
    "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "glm4_moe", "phi3", "gpt_oss",
}  # fmt: skip
# q/k/v projections with a bias whatever attention_bias says (transformers' modeling code of each type)
QKV_BIAS = {"qwen2", "qwen2_moe", "chatglm", "gpt_oss"}
# gpt-oss's extra parameters, all kept in 16 bits, as vLLM builds the model whatever config.json says (0.33.0
# vllm/model_executor/models/gpt_oss.py: o_proj RowParallelLinear bias=True, one attention sink per head
# (make_attention_sink, split over TP), the router GateLinear bias=True, FusedMoE has_bias=True: w13_bias
# [experts, 2 x intermediate / TP] and w2_bias [experts, hidden] in bfloat16, quantization/mxfp4.py create_weights)
OUT_BIAS = {"gpt_oss"}
ATTENTION_SINKS = {"gpt_oss"}
MOE_BIAS = {"gpt_oss"}  # the router's bias and each expert's gate_up and down biases
# MLPs that are not gated (two matrices instead of three)
NOT_GATED_ACT = {"gelu", "gelu_new", "relu", "gelu_fast"}
NOT_GATED_TYPES = {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "starcoder2", "phi", "gpt_bigcode"}
# chatglm / glm-4-9b name their fields differently (their configuration_chatglm.py, trust_remote_code)
CHATGLM_NAMES = {
    "num_layers": "num_hidden_layers",
    "multi_query_group_num": "num_key_value_heads",
    "kv_channels": "head_dim",
    "ffn_hidden_size": "intermediate_size",
    "padded_vocab_size": "vocab_size",
    "seq_length": "max_position_embeddings",
}


class ModelArch(Struct, frozen=True):
    """A model's structure as the sizing reads it from its config.json (from_config_dict)."""

    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_positions: int
    vocab_size: int
    tied_embeddings: bool
    torch_dtype: str
    source: str
    model_type: str = "llama"
    intermediate_size: int = 0
    gated_mlp: bool = True
    qkv_bias: bool = False
    out_bias: bool = False  # the attention output projection has a bias (OUT_BIAS)
    attention_sinks: bool = False  # one learned sink logit per attention head and layer (ATTENTION_SINKS)
    moe_bias: bool = False  # the MoE router and every routed expert's projections have biases (MOE_BIAS)
    # mixture of experts: routed experts per MoE layer, their MLP width, shared-expert width per MoE layer
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0
    shared_gate: bool = False
    moe_layer_ids: tuple[int, ...] = ()
    # multi-head latent attention (DeepSeek-V2/V3): vLLM caches kv_lora_rank + qk_rope_head_dim per token per layer
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # sliding-window layers (how vLLM V1 holds their KV cache: sizing/hybrid.py)
    sliding_window: int = 0
    sliding_layers: int = 0
    norms_per_layer: int = 2
    qk_norm: bool = False
    mtp_layers: int = 0  # DeepSeek-V3's multi-token-prediction layers: in the checkpoint, not loaded by default
    # a multimodal model's vision encoder and projector (vision_parameters), loaded with the language model on the
    # first pipeline stage, split over TP like its layers, kept in 16 bits; 0 where none is modelled
    vision_parameters: int = 0
    # the rotary embedding's cos/sin cache vLLM builds once per model (rope_cache_shape): positions x rotary dims
    rope_positions: int = 0
    rotary_dim: int = 0
    parameters_estimated: bool = False  # structure not modelled (model_type outside MODELLED)
    weight_bytes_given: float | None = None  # a GGUF file's tensor bytes (already in its own formats)
    gguf_architecture: str | None = None  # a GGUF file's general.architecture (llama.cpp's name, e.g. deepseek2)
    # a block-quantized checkpoint's quantization_config.weight_block_size (output rows, input columns), e.g. FP8
    weight_block_size: tuple[int, int] | None = None
    # the checkpoint's own weight format (quantization_config.quant_method), which vLLM runs when --quantization is not
    # given: the quantization.yaml formats vLLM would pick, by preference (fit.resolve takes the first the GPU runs)
    checkpoint_quantization: tuple[str, ...] = ()
    # quantization_config.quant_method as vLLM reads it (lower case), modelled or not; None: a 16-bit checkpoint
    checkpoint_method: str | None = None
    # config.json's `architectures`, which vLLM looks up in its model registry (sizing/architectures.py); () unknown
    architectures: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    # ---- structure -> parameters
    @property
    def is_moe(self) -> bool:
        return self.experts > 0 and bool(self.moe_layer_ids)

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def mlp_width(self) -> int:
        """MLP intermediate elements one token holds (the gate/up width): the dense MLP's intermediate size, or in MoE
        layers the routed experts' width x experts per token plus the shared experts'; the wider where a model has
        both kinds of layer (DeepSeek-V3's dense first layers)."""
        moe = self.experts_per_token * self.expert_intermediate + self.shared_intermediate if self.is_moe else 0
        dense = self.intermediate_size if len(self.moe_layer_ids) < self.layers else 0
        return max(moe, dense)

    def attention_parameters(self) -> int:
        """One layer's attention projections (and MLA's latent norms), biases included."""
        h, nh = self.hidden_size, self.attention_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * nh * qk if self.q_lora_rank else h * nh * qk
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_b = self.kv_lora_rank * nh * (self.qk_nope_head_dim + self.v_head_dim)
            return q + kv_a + kv_b + nh * self.v_head_dim * h
        q, kv = nh * self.head_dim, self.kv_heads * self.head_dim
        bias = (q + 2 * kv if self.qkv_bias else 0) + (h if self.out_bias else 0)
        norm = 2 * self.head_dim if self.qk_norm else 0
        sinks = nh if self.attention_sinks else 0
        return h * q + 2 * h * kv + q * h + bias + norm + sinks

    def mlp_parameters(self, width: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden_size * width

    def moe_parameters(self) -> int:
        """One MoE layer: routed experts, shared expert(s) (and their gate), router."""
        shared = self.mlp_parameters(self.shared_intermediate) + (self.hidden_size if self.shared_gate else 0)
        router = (self.hidden_size + 1) * self.experts if self.moe_bias else self.hidden_size * self.experts
        return self.experts * (self.mlp_parameters(self.expert_intermediate) + int(self.expert_bias())) + shared + router

    def expert_bias(self, tp: int = 1) -> float:
        """One routed expert's biases on a GPU (MOE_BIAS): gate_up's split over TP like its columns, down's whole."""
        if not self.moe_bias:
            return 0
        return ((2 if self.gated_mlp else 1) * self.expert_intermediate) / tp + self.hidden_size

    @property
    def embedding_parameters(self) -> int:
        """Input embedding plus lm_head (once when tied), in parameters: kept in 16 bits by the 4/8-bit formats."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)

    @property
    def parameters(self) -> int:
        """What vLLM loads: every decoder layer, embeddings, LM head and the final norm (not MTP layers)."""
        moe = len(self.moe_layer_ids)
        dense = self.layers - moe
        per_dense = self.attention_parameters() + self.mlp_parameters(self.intermediate_size)
        per_moe = self.attention_parameters() + self.moe_parameters()
        norms = self.layers * self.norms_per_layer * self.hidden_size + self.hidden_size
        return dense * per_dense + moe * per_moe + norms + self.embedding_parameters + self.vision_parameters

    @property
    def parameters_b(self) -> float:
        return self.parameters / 1e9

    @property
    def active_parameters_b(self) -> float:
        if not self.is_moe:
            return self.parameters_b
        idle = len(self.moe_layer_ids) * (self.experts - self.experts_per_token) * self.mlp_parameters(self.expert_intermediate)
        return (self.parameters - idle) / 1e9

    # ---- structure -> KV cache
    def kv_elements_per_token_per_layer(self, tp: int = 1) -> int:
        """Cache elements one token takes in one layer on one tensor-parallel rank. MLA: one latent of
        kv_lora_rank + qk_rope_head_dim, the same on every rank; otherwise K and V of the rank's KV heads
        (heads split over TP, replicated when there are fewer KV heads than ranks)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * kv_heads_per_rank(self.kv_heads, tp) * self.head_dim


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """vLLM splits KV heads over TP ranks; with fewer KV heads than ranks each rank keeps one (replicated)."""
    return max(1, kv_heads // tp)


# ---------------------------------------------------------------- reading config.json as vLLM does


@cache
def _defaults_text() -> str:
    return DEFAULTS.read_text(encoding="utf-8")


@cache
def config_defaults() -> dict:
    """The whole snapshot: transformers' version, the fields, every model_type's row."""
    return json.loads(_defaults_text())


@cache
def type_defaults(model_type: str) -> dict | None:
    """One model_type's row of the snapshot (None: a type it does not list), read from that type's own line: the
    snapshot script writes one line per type (`  "<type>": {...},`), and json.loads of the whole 150 KB file was 11M
    instructions of a 2,900M preview (issue 25). tests/sizing/test_models.py reads every type both ways."""
    text = _defaults_text()
    key = f"\n  {json.dumps(model_type)}: "
    at = text.find(key)
    if at < 0:
        return None
    start = at + len(key)
    return json.loads(text[start : text.index("\n", start)].removesuffix(","))


MAX_LAYERS = 10_000


def _whole(cfg: dict, shown: str, name: str, default=None, minimum: int = 1) -> int:
    v = cfg.get(name)
    if v is None:
        if default is not None:
            return default
        raise UserError([Problem(shown, name, "missing; is this a decoder model's config.json?")])
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise UserError([Problem(shown, name, f"must be a whole number, got {v!r}")])
    if v != int(v) or not minimum <= v < 2**40:
        raise UserError([Problem(shown, name, f"must be a whole number from {minimum} to 2**40, got {v!r}")])
    return int(v)


def with_defaults(cfg: dict) -> tuple[dict, str, bool]:
    """(the text model's fields with its architecture's defaults filled in, model_type, type known to the
    snapshot). A composite (multimodal) config's text_config is what vLLM sizes the language model from."""
    model_type = str(cfg.get("model_type") or "")
    row = type_defaults(model_type) or {}
    if isinstance(cfg.get("text_config"), dict):
        text = dict(cfg["text_config"])
        model_type = str(text.get("model_type") or row.get("text_config_type") or model_type)
        cfg = {**{k: v for k, v in cfg.items() if k in ("torch_dtype", "dtype", "quantization_config")}, **text}
        row = type_defaults(model_type) or {}
    if model_type in ("chatglm", "glm") or "multi_query_group_num" in cfg:
        cfg = {CHATGLM_NAMES.get(k, k): v for k, v in cfg.items()}
    for alias_of, alias in (row.get("attribute_map") or {}).items():
        if alias in cfg and alias_of not in cfg:
            cfg[alias_of] = cfg[alias]
    filled = {**{k: v for k, v in (row.get("defaults") or {}).items() if v != "<not a plain value>"}, **cfg}
    return filled, model_type, type_defaults(model_type) is not None


def from_config_dict(raw: dict, shown: str, name: str | None = None, source: str | None = None) -> ModelArch:
    """A ModelArch from config.json's fields; `shown` names the file in error messages."""
    cfg, model_type, _known = with_defaults(raw)
    qc = cfg.get("quantization_config")
    if qc is not None and not isinstance(qc, dict):  # vLLM reads quantization_config["quant_method"]: it fails on text
        raise UserError(
            [
                Problem(
                    shown,
                    "quantization_config",
                    f"must be a mapping with quant_method (the checkpoint's), got {kind(qc)} {str(qc)[:40]!r}",
                )
            ]
        )
    layers = _whole(cfg, shown, "num_hidden_layers")
    if layers > MAX_LAYERS:  # sizing walks the layers: 822 million (a corrupt GGUF's block_count) never finished
        raise UserError(
            [
                Problem(
                    shown,
                    "num_hidden_layers",
                    f"{layers} layers is more than any decoder model has (at most {MAX_LAYERS} here; published models "
                    "have a few hundred at most): is this the model's own config?",
                )
            ]
        )
    hidden = _whole(cfg, shown, "hidden_size")
    heads = _whole(cfg, shown, "num_attention_heads")
    kv_heads = _whole(cfg, shown, "num_key_value_heads", default=heads)
    if heads % kv_heads:  # the KV cache was sized from it (1000 KV heads for 28 query heads: a 36x cache, no refusal)
        raise UserError(
            [
                Problem(
                    shown,
                    "num_key_value_heads",
                    f"{kv_heads} does not divide num_attention_heads {heads}: each KV head serves a whole number of "
                    "query heads (grouped-query attention); is this the model's own config.json?",
                )
            ]
        )
    head_dim = _whole(cfg, shown, "head_dim", default=max(hidden // heads, 1))
    vocab = _whole(cfg, shown, "vocab_size")
    intermediate = _whole(cfg, shown, "intermediate_size", default=4 * hidden)
    act = str(cfg.get("hidden_act") or cfg.get("hidden_activation") or "silu")
    gated = model_type not in NOT_GATED_TYPES and (model_type in MODELLED or act not in NOT_GATED_ACT)
    notes: list[str] = []

    experts = 0
    for key in ("n_routed_experts", "num_experts", "num_local_experts"):
        if cfg.get(key):
            experts = _whole(cfg, shown, key)
            break
    moe_ids: tuple[int, ...] = ()
    expert_width = shared_width = 0
    shared_gate = False
    if experts > 1:
        expert_width = _whole(cfg, shown, "moe_intermediate_size", default=intermediate)
        if "n_routed_experts" in cfg and cfg.get("n_routed_experts"):  # DeepSeek / GLM-4.5 style
            first = _whole(cfg, shown, "first_k_dense_replace", default=0, minimum=0)
            freq = _whole(cfg, shown, "moe_layer_freq", default=1)
            moe_ids = tuple(i for i in range(layers) if i >= first and i % freq == 0)
            shared_width = _whole(cfg, shown, "n_shared_experts", default=0, minimum=0) * expert_width
        elif "num_local_experts" in cfg and cfg.get("num_local_experts"):  # Mixtral: every layer
            moe_ids = tuple(range(layers))
        else:  # Qwen2-MoE / Qwen3-MoE: decoder_sparse_step and mlp_only_layers
            step = _whole(cfg, shown, "decoder_sparse_step", default=1)
            dense_only = cfg.get("mlp_only_layers") or []
            bad = [i for i in dense_only if isinstance(i, bool) or not isinstance(i, int)] if isinstance(dense_only, list) else []
            if bad or not isinstance(dense_only, list):  # 1.5 was a TypeError traceback, "x" read as no dense layer
                got = f"{bad[0]!r} in it" if bad else kind(dense_only)
                raise UserError([Problem(shown, "mlp_only_layers", f"expected a list of layer numbers, got {got}")])
            moe_ids = tuple(i for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
            shared_width = _whole(cfg, shown, "shared_expert_intermediate_size", default=0, minimum=0)
            shared_gate = shared_width > 0
    else:
        experts = 0

    kv_lora = _whole(cfg, shown, "kv_lora_rank", default=0, minimum=0) if cfg.get("kv_lora_rank") else 0
    mla = {}
    if kv_lora:
        mla = {
            "kv_lora_rank": kv_lora,
            "q_lora_rank": _whole(cfg, shown, "q_lora_rank", default=0, minimum=0) if cfg.get("q_lora_rank") else 0,
            "qk_rope_head_dim": _whole(cfg, shown, "qk_rope_head_dim"),
            "qk_nope_head_dim": _whole(cfg, shown, "qk_nope_head_dim"),
            "v_head_dim": _whole(cfg, shown, "v_head_dim"),
        }

    sliding, sliding_layers = _sliding(cfg, model_type, layers, shown)
    max_positions = _whole(cfg, shown, "max_position_embeddings", default=0, minimum=0)
    rope_positions, rotary_dim = rope_cache_shape(cfg, max_positions, mla.get("qk_rope_head_dim") or head_dim, shown)
    if model_type == "gemma3_text":  # a second cache: the sliding layers' rope (rope_local_base_freq, no scaling)
        rope_positions += max_positions
    vision = vision_parameters(raw, hidden, shown)
    if vision:
        notes.append(
            f"the vision encoder and projector ({vision:,} parameters) are loaded with the language model, in 16 bits, "
            "on the first pipeline stage"
        )
    elif isinstance(raw.get("vision_config"), dict):
        notes.append(
            "the vision encoder is not counted (its structure is modelled for Gemma 3's SigLIP only): the weights are the "
            "language model's, low by the encoder's size"
        )
    if sliding_layers:
        notes.append(
            f"{sliding_layers} of {layers} layers use a sliding window of {sliding} tokens (V1's hybrid KV cache "
            "manager: sizing/hybrid.py)"
        )
    if cfg.get("num_nextn_predict_layers"):
        notes.append(
            f"{cfg['num_nextn_predict_layers']} multi-token-prediction layer(s) in the checkpoint are not counted: vLLM "
            "loads them only for speculative decoding"
        )
    if model_type not in MODELLED:
        notes.append(f"architecture {model_type or '(no model_type)'!r} is not one whose structure this tool models")
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    checkpoint_formats, unmodelled = checkpoint_quantization(cfg)
    if unmodelled:
        notes.append(unmodelled)
    return ModelArch(
        name=name or str(raw.get("_name_or_path") or shown),
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        max_positions=max_positions,
        vocab_size=vocab,
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        torch_dtype=dtype,
        source=source or shown,
        model_type=model_type,
        intermediate_size=intermediate,
        gated_mlp=gated,
        qkv_bias=model_type in QKV_BIAS or bool(cfg.get("attention_bias")) or bool(cfg.get("add_qkv_bias")),
        out_bias=model_type in OUT_BIAS,
        attention_sinks=model_type in ATTENTION_SINKS,
        moe_bias=model_type in MOE_BIAS and experts > 1,
        experts=experts,
        experts_per_token=_whole(cfg, shown, "num_experts_per_tok", default=0, minimum=0) if experts else 0,
        expert_intermediate=expert_width,
        shared_intermediate=shared_width,
        shared_gate=shared_gate,
        moe_layer_ids=moe_ids,
        sliding_window=sliding,
        sliding_layers=sliding_layers,
        norms_per_layer=4 if model_type in ("gemma2", "gemma3_text") else 2,
        qk_norm=model_type in ("qwen3", "qwen3_moe", "gemma3_text"),
        mtp_layers=_whole(cfg, shown, "num_nextn_predict_layers", default=0, minimum=0),
        rope_positions=rope_positions,
        rotary_dim=rotary_dim,
        vision_parameters=vision,
        parameters_estimated=model_type not in MODELLED,
        weight_block_size=weight_block_size(cfg),
        checkpoint_quantization=checkpoint_formats,
        checkpoint_method=checkpoint_method(cfg),
        architectures=_architectures(raw, shown),
        gguf_architecture=None,  # resolve sets a GGUF file's
        notes=tuple(notes),
        **mla,
    )


def _architectures(raw: dict, shown: str) -> tuple[str, ...]:
    """config.json's `architectures` as vLLM's registry takes them: a list of class names, or one name, which it wraps
    in a list (0.31.0 ModelRegistry.inspect_model_cls); () where the file has none (then nothing is looked up)."""
    value = raw.get("architectures")
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(a, str) and a.strip() for a in value):
        raise UserError(
            [Problem(shown, "architectures", f'must be a list of model class names, e.g. ["Qwen2ForCausalLM"], got {value!r}')]
        )
    return tuple(value)


def checkpoint_method(cfg: dict) -> str | None:
    """The checkpoint's quantization_config.quant_method, lower case as vLLM compares it (ModelConfig._verify_quantization)."""
    qc = cfg.get("quantization_config")
    return str(qc["quant_method"]).lower() if isinstance(qc, dict) and qc.get("quant_method") else None


def checkpoint_quantization(cfg: dict) -> tuple[tuple[str, ...], str | None]:
    """(the weight formats of quantization.yaml vLLM would run for the checkpoint's quantization_config, by preference;
    a note when it names a method or width no row models). vLLM reads quant_method when --quantization is not given
    (ModelConfig._verify_quantization) and moves a 4-bit GPTQ (symmetric) or AWQ checkpoint to its Marlin kernel from
    compute capability 8.0 (GPTQMarlinConfig / AWQMarlinConfig.override_quantization_method)."""
    qc = cfg.get("quantization_config")
    if not isinstance(qc, dict) or not qc.get("quant_method"):
        return (), None
    method = str(qc["quant_method"]).lower()
    bits = qc.get("bits", qc.get("w_bit"))
    if method in ("fp8", "mxfp4"):
        return (method,), None
    if method == "awq" and bits == 4:
        return ("awq_marlin", "awq"), None
    if method == "gptq" and bits == 4:
        return (("gptq_marlin", "gptq") if qc.get("sym", True) else ("gptq",)), None
    if method == "bitsandbytes" and qc.get("load_in_4bit"):
        return ("bitsandbytes",), None
    if method == "compressed-tensors":  # the weights' scheme of every config group: W8A8 (8 bits) or W4A16 (4, g128)
        found = qc.get("config_groups")
        groups = [g.get("weights") for g in (found.values() if isinstance(found, dict) else ()) if isinstance(g, dict)]
        schemes = {(w.get("num_bits"), w.get("group_size")) for w in groups if isinstance(w, dict)}
        if schemes and all(b == 8 for b, _ in schemes):
            return ("compressed-tensors",), None
        if schemes == {(4, 128)}:
            return ("w4a16",), None
        bits = "/".join(str(b) for b in sorted({b for b, _ in schemes if isinstance(b, int)})) or None
    return (), (
        f"the checkpoint's quantization_config (quant_method {method}"
        + (f", {bits} bits" if bits is not None else ", no bits given")
        + ") is not a format this tool sizes: its weights are counted in 16 bits; give --quantization for its format"
    )


def weight_block_size(cfg: dict) -> tuple[int, int] | None:
    """The checkpoint's quantization block (quantization_config.weight_block_size: [output rows, input columns]), or
    None for a checkpoint without one (unquantized, per-tensor or per-channel scales)."""
    qc = cfg.get("quantization_config")
    block = qc.get("weight_block_size") if isinstance(qc, dict) else None
    if isinstance(block, list | tuple) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
        return int(block[0]), int(block[1])
    return None


def rope_cache_shape(cfg: dict, max_positions: int, head_dim: int, shown: str = "config.json") -> tuple[int, int]:
    """(positions, rotary dims) of the cos/sin cache vLLM's get_rope builds for the model: one tensor of positions x
    rotary_dim (cos and sin of rotary_dim / 2 frequencies side by side), shared by every layer (get_rope caches the
    module by its arguments). Positions: max_position_embeddings, times the factor for linear and dynamic scaling,
    original_max_position_embeddings x factor for YaRN (DeepSeek's too), original + max for Phi-3's long/short caches;
    rotary dims: head_dim (MLA: qk_rope_head_dim) x partial_rotary_factor. A config row without rope_scaling takes the
    plain cache. A factor, original length or partial_rotary_factor that is no positive number (text, a list, 1e308)
    is a UserError on `shown` naming the field (they were ValueError and OverflowError tracebacks)."""
    key = "rope_scaling" if cfg.get("rope_scaling") else "rope_parameters"
    found = cfg.get(key)
    scaling: dict = found if isinstance(found, dict) else {}  # another shape: the plain cache, as before
    kind = str(scaling.get("rope_type") or scaling.get("type") or "default")
    factor = _positive(scaling.get("factor") or 1.0, shown, f"{key}.factor")
    given = scaling.get("original_max_position_embeddings")
    original = _positive(given, shown, f"{key}.original_max_position_embeddings") if given else max_positions
    if kind in ("yarn", "deepseek_yarn"):
        positions = int(original * factor)
    elif kind in ("linear", "dynamic"):
        positions = int(max_positions * factor)
    elif kind in ("longrope", "su"):
        positions = int(max_positions + original)
    else:  # default, llama3, mrope: the model's own maximum
        positions = max_positions
    partial = _positive(cfg.get("partial_rotary_factor") or 1.0, shown, "partial_rotary_factor", maximum=1)
    return positions, int(head_dim * partial)


# SiglipVisionConfig's defaults for the fields a vision_config leaves out (transformers' configuration_siglip.py)
SIGLIP_DEFAULTS = {"image_size": 224, "patch_size": 16, "num_channels": 3}


def vision_parameters(raw: dict, text_hidden: int, shown: str = "config.json") -> int:
    """The vision encoder and projector vLLM loads beside the language model, where modelled: Gemma 3
    (Gemma3ForConditionalGeneration, model_type gemma3) with its SigLIP encoder (vision_config model_type
    siglip_vision_model, vision_use_head false): the patch embedding (a conv of channels x patch^2 x hidden, with bias),
    (image_size / patch_size)^2 position embeddings, per layer q/k/v/out projections with biases, two LayerNorms and
    the MLP (fc1, fc2, biases), the post LayerNorm; then the projector (Gemma3MultiModalProjector: a vision hidden x
    text hidden matrix and an RMSNorm of the vision width). Gemma 3 4b/12b/27b: 416,866,032 + 1152 x text hidden + 1152,
    which with the text model gives the checkpoints' 4,300,079,472 / 12,187,325,040 / 27,432,406,640 (models.yaml).
    vLLM 0.19.0 builds them as gemma3_mm.py's vision_tower and multi_modal_projector. Other multimodal configs: 0 (the
    language model alone; from_config_dict notes that the encoder is not counted)."""
    vision = raw.get("vision_config")
    if raw.get("model_type") != "gemma3" or not isinstance(vision, dict):
        return 0
    if vision.get("model_type") != "siglip_vision_model" or vision.get("vision_use_head"):
        return 0
    v = {f"vision_config.{k}": x for k, x in {**SIGLIP_DEFAULTS, **vision}.items()}  # a problem names the nested field
    h, inner, layers, patch, image, channels = (
        _whole(v, shown, f"vision_config.{k}")
        for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "patch_size", "image_size", "num_channels")
    )
    embeddings = channels * patch * patch * h + h + (image // patch) ** 2 * h
    per_layer = 4 * (h * h + h) + 2 * 2 * h + (h * inner + inner) + (inner * h + h)
    projector = h * text_hidden + h
    return embeddings + layers * per_layer + 2 * h + projector


def _positive(value, shown: str, field: str, maximum: float = 1e6) -> float:
    """A scaling number of config.json: above 0 and at most `maximum` (a million: a factor or length beyond any model's;
    positions stay far below 2**40 with max_position_embeddings below it)."""
    if problems := number_problems(value, shown, field, 0, maximum, above=True):
        raise UserError(problems)
    return float(value)


def _sliding(cfg: dict, model_type: str, layers: int, shown: str) -> tuple[int, int]:
    """(window, number of sliding-window layers), from layer_types, a pattern, or Qwen2's use_sliding_window."""
    window = cfg.get("sliding_window")
    if not window or not isinstance(window, int):
        return 0, 0
    window = _whole(cfg, shown, "sliding_window")  # -5 was read as a window of -5 tokens, true as one of 1
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        return window, sum(1 for t in types if t == "sliding_attention")
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        if not cfg.get("use_sliding_window"):
            return 0, 0
        start = _whole(cfg, shown, "max_window_layers", default=layers, minimum=0) or layers  # "x": a ValueError
        return window, max(0, layers - start)
    if model_type == "gemma2":  # alternating, sliding on even layers (transformers' Gemma2Config)
        return window, (layers + 1) // 2
    if model_type == "gemma3_text":
        pattern = _whole(cfg, shown, "sliding_window_pattern", default=6, minimum=0) or 6
        return window, sum(1 for i in range(layers) if (i + 1) % pattern != 0)
    if model_type in ("mistral", "mixtral"):
        return window, layers
    return 0, 0


# ---------------------------------------------------------------- the catalog


def _config_name(path: Path) -> str:
    return path.stem.replace("--", "/", 1)


@cache
def _sources() -> dict:
    """SOURCES.yaml `configs:` (file name -> model, card_parameters_b, ...), written with the copies."""
    path = CONFIGS / "SOURCES.yaml"
    if not path.exists():
        return {}

    doc = inputs.load_mapping(path, "sizing/data/configs/SOURCES.yaml")
    rows = doc.get("configs") or {}
    return rows if isinstance(rows, dict) else {}


def hub_config_url(name: str) -> str:
    """Where a model's config.json is published on the Hugging Face Hub (SOURCES.yaml's hf_url of each copy)."""
    return f"https://huggingface.co/{name}/blob/main/config.json"


def card_parameters_b(name: str) -> float | None:
    """The model card's total parameter count in billions, where known, that a catalog model's count is checked
    against within 2 % (tests/sizing/test_models.py): SOURCES.yaml for a config.json copy, else its models.yaml row.
    Read only here: sizing a model needs neither it nor SOURCES.yaml (8.8M instructions, a sixth of what a preview
    spent reading YAML)."""
    path = _config_files(CONFIGS).get(name)
    row = (_sources().get(path.name) or {}) if path is not None else (_rows(CATALOG).get(name) or {})
    v = row.get("card_parameters_b")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# Keyed by the data paths, so that a caller pointing CONFIGS or CATALOG elsewhere (the tests) reads those.
@cache
def _config_files(configs: Path) -> dict[str, Path]:
    """Model name -> its config.json copy in data/configs, named by the file (`Org--Name.json`; SOURCES.yaml's `model`
    says the same, checked by tests/sizing/test_models.py)."""
    if not configs.is_dir():
        return {}
    return {_config_name(p): p for p in sorted(configs.glob("*.json"))}


@cache
def _rows(path: Path) -> dict:
    """data/models.yaml `models:` (name -> source, card_parameters_b, config)."""

    with inputs.shaped("sizing/data/models.yaml"):
        return inputs.load_mapping(path, "sizing/data/models.yaml")["models"]


@cache
def _from_file(name: str, path: Path) -> ModelArch:
    shown = f"sizing/data/configs/{path.name}"
    raw = read_json_object(path, "a model's config.json")
    return from_config_dict(raw, shown, name=name, source=hub_config_url(name))


@cache
def _from_row(name: str, path: Path) -> ModelArch:
    row = _rows(path)[name]
    with inputs.shaped("sizing/data/models.yaml"):
        return from_config_dict(row["config"], f"sizing/data/models.yaml: models.{name}.config", name=name, source=row["source"])


@cache
def catalog() -> dict[str, ModelArch]:
    """Every model the sizing catalog knows: data/configs/*.json, then data/models.yaml rows (a shipped config.json
    copy is the truth where both name a model)."""
    out = {name: _from_file(name, path) for name, path in _config_files(CONFIGS).items()}
    return out | {name: _from_row(name, CATALOG) for name in _rows(CATALOG) if name not in out}


def lookup(name: str) -> ModelArch | None:
    """One catalog entry, built alone (catalog() builds them all: every config.json read)."""
    path = _config_files(CONFIGS).get(name)
    if path is not None:
        return _from_file(name, path)
    return _from_row(name, CATALOG) if name in _rows(CATALOG) else None


def resolve(model: str) -> ModelArch:
    """A catalog name, the path of a config.json (or of a folder holding one), or a GGUF file."""
    path = Path(model)
    if path.suffix.lower() == ".gguf":
        # deferred: gguf (numpy): only a .gguf model is read with it
        from gpufleet.sizing import gguf_file

        cfg, total, name, arch = gguf_file.read(path)
        m = from_config_dict(cfg, f"{path} (GGUF metadata)", name=name, source=str(path))
        notes = (*m.notes, f"weights: {total / 2**30:.2f} GiB of GGUF tensors")
        return replace(m, weight_bytes_given=total, gguf_architecture=arch, notes=notes)
    is_dir = os.path.isdir(path)  # Path.is_dir raises on a name of > 255 bytes (ENAMETOOLONG): a traceback
    if path.suffix == ".json" or is_dir:
        return from_config(path / "config.json" if is_dir else path)
    found = lookup(model)
    if found is None:
        raise UserError(
            [
                Problem(
                    "--model",
                    "",
                    f"unknown model {model!r}"
                    + did_you_mean(model, catalog())
                    + "; give a catalog name (sizing/data/models.yaml, sizing/data/configs/), the path of the model's "
                    "config.json or of a .gguf file",
                )
            ]
        )
    return found


def from_config(path: Path) -> ModelArch:
    shown = str(path)
    raw = read_json_object(path, "give the path of the model's config.json")
    arch = from_config_dict(raw, shown, name=str(raw.get("_name_or_path") or path.parent.name or path.name))
    if raw.get("architectures") is None:  # a catalog row may leave them out; a model's own config.json has them
        raise UserError(
            [
                Problem(
                    shown,
                    "architectures",
                    "missing: vLLM picks the model's class from it and refuses a config without it (No model "
                    "architectures are specified); copy it from the model's config.json",
                )
            ]
        )
    return arch
