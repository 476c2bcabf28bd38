"""What each GPU of a vLLM deployment holds, as vLLM splits a model: tensor parallel (TP), pipeline parallel (PP),
data parallel (DP) and expert parallel (EP); and the start-up refusals that come from the split.

- TP: attention heads, MLP columns, the vocabulary (embedding and LM head) and the KV heads are split over the TP
  ranks; with fewer KV heads than ranks every rank keeps one (vLLM replicates them: QKVParallelLinear,
  vllm/model_executor/layers/linear.py). MLA's down-projections (q_a, kv_a) are replicated; its compressed KV latent
  is cached whole on every rank. Norms and MoE routers are replicated.
- PP: decoder layers are split into stages by vLLM's get_pp_indices (vllm/distributed/utils.py): layers // PP each,
  the remainder one by one to the stages before the last. The first stage holds the embedding, the last the LM head
  (with tied embeddings and PP > 1 both stages hold a copy). The KV cache of a stage holds its layers only; vLLM
  takes the smallest block count over the stages (V1 get_kv_cache_config / V0 min over workers).
- DP: replicas of the whole model (each DP rank has its TP x PP group); KV tokens are per replica.
- EP (--enable-expert-parallel): the routed experts of each MoE layer are split over TP x DP ranks, whole experts,
  the first ranks taking one more when they do not divide (vllm/model_executor/layers/fused_moe/layer.py
  determine_expert_map); without EP every expert is split over the TP ranks. Attention stays TP-split.
All figures are parameters (or cache elements); the caller applies bytes per element.
"""

from __future__ import annotations

import math

from msgspec import Struct

from gpufleet.sizing.models import ModelArch, kv_heads_per_rank

HEADS_REFUSAL = "Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})."
# vLLM's wording (ModelConfig.verify_with_parallel_config; the same from 0.4 to 0.33: vllm#4232, gpustack#814)
EXPERTS_REFUSAL = "n_physical_experts={experts} must be divisible by ep_size={ep}. Adjust num_redundant_experts."
# a V1 build's wording (vllm#52435's log, 2026-08); older builds spread the remainder (determine_expert_map)


def stage_layers(layers: int, pp: int) -> list[range]:
    """Layer ids of each PP stage, as vLLM's get_pp_indices splits them (remainder to the stages before the last)."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    out, start = [], 0
    for n in parts:
        out.append(range(start, start + n))
        start += n
    return out


class RankParams(Struct, frozen=True):
    """Parameters one GPU of a stage holds: `quantizable` (linear layers: attention, MLP, experts) and `kept`
    (embedding, LM head, norms, routers: 16-bit in every format); `expert` is the part of quantizable that is
    routed experts (mxfp4 quantizes only those)."""

    quantizable: float
    kept: float
    expert: float
    layers: int
    outside: float = 0.0  # part of kept outside the decoder layers (embedding, LM head, final norm): never offloaded


def attention_per_rank(m: ModelArch, tp: int) -> float:
    h, nh = m.hidden_size, m.attention_heads
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        replicated = (h * m.q_lora_rank if m.q_lora_rank else 0) + h * (m.kv_lora_rank + m.qk_rope_head_dim)
        split = (m.q_lora_rank * nh * qk if m.q_lora_rank else h * nh * qk) + m.kv_lora_rank * nh * (
            m.qk_nope_head_dim + m.v_head_dim
        )
        return replicated + (split + nh * m.v_head_dim * h) / tp
    q = nh * m.head_dim
    kv = kv_heads_per_rank(m.kv_heads, tp) * m.head_dim
    return 2 * h * q / tp + 2 * h * kv + ((q / tp + 2 * kv) if m.qkv_bias else 0)


def layer_params(m: ModelArch, tp: int, ep_size: int, moe: bool) -> tuple[float, float, float]:
    """One decoder layer's parameters on one GPU, as (quantizable, kept, expert) (RankParams); `moe`: a layer of
    routed experts (ep_size > 1: spread over the expert-parallel group, whole on each of its ranks)."""
    quant = attention_per_rank(m, tp)
    kept: float = m.norms_per_layer * m.hidden_size + (m.kv_lora_rank if m.is_mla else 0)
    kept += (m.hidden_size if m.out_bias else 0) + (m.attention_heads / tp if m.attention_sinks else 0)
    if not moe:
        return quant + m.mlp_parameters(m.intermediate_size) / tp, kept, 0.0
    per_expert = m.mlp_parameters(m.expert_intermediate)
    local = math.ceil(m.experts / ep_size) if ep_size > 1 else m.experts
    routed = local * per_expert / (1 if ep_size > 1 else tp)
    quant += routed + m.mlp_parameters(m.shared_intermediate) / tp
    kept += (m.hidden_size + (1 if m.moe_bias else 0)) * m.experts + (m.hidden_size if m.shared_gate else 0)
    kept += local * m.expert_bias(1 if ep_size > 1 else tp)
    return quant, kept, routed


def rank_params(m: ModelArch, tp: int, pp: int, dp: int, ep: bool) -> list[RankParams]:
    """Per PP stage, what its heaviest GPU holds."""
    ep_size = tp * dp if ep and m.is_moe else 1
    out = []
    stages = stage_layers(m.layers, pp)
    moe_layers = set(m.moe_layer_ids)  # a set: membership in the tuple made this quadratic in the layers
    dense_layer, moe_layer = layer_params(m, tp, ep_size, False), layer_params(m, tp, ep_size, True)
    for s, ids in enumerate(stages):
        quant = kept = expert = 0.0
        for i in ids:
            q, k, e = moe_layer if i in moe_layers else dense_layer
            quant, kept, expert = quant + q, kept + k, expert + e
        vocab = m.vocab_size * m.hidden_size / tp
        outside = vocab + m.vision_parameters / tp if s == 0 else 0.0  # the vision encoder, on the first stage
        if s == len(stages) - 1:
            outside += m.hidden_size + (vocab if (not m.tied_embeddings or pp > 1) else 0)
        out.append(RankParams(quant, kept + outside, expert, len(ids), outside))
    return out


def layer_sizes(m: ModelArch, tp: int, dp: int, ep: bool, stage_ids: range) -> list[tuple[bool, float]]:
    """The decoder layers of a stage in order, as (a layer of routed experts, its parameters on one GPU)."""
    ep_size = tp * dp if ep and m.is_moe else 1
    moe_layers = set(m.moe_layer_ids)
    out = []
    for i in stage_ids:
        quant, kept, _ = layer_params(m, tp, ep_size, i in moe_layers)
        out.append((i in moe_layers, quant + kept))
    return out


def kv_elements_per_token(m: ModelArch, tp: int, layers: int) -> int:
    """Cache elements one token takes on one GPU holding `layers` layers."""
    return layers * m.kv_elements_per_token_per_layer(tp)


def lora_parameters_per_rank(m: ModelArch, tp: int, layers: int, max_loras: int, rank: int) -> float:
    """The LoRA weights vLLM preallocates on one GPU: for each of max_loras slots and each layer, A (rank x in) and
    B (out x rank) of the fused qkv, o, gate_up and down projections; column-parallel layers split B's rows over TP,
    row-parallel ones split A's columns (vllm/lora/layers: lora_a_stacked / lora_b_stacked of
    MergedQKVParallelLinearWithLoRA, RowParallelLinearWithLoRA, MergedColumnParallelLinearWithLoRA). MoE experts'
    LoRA is not counted (said by the caller)."""
    if not max_loras:
        return 0.0
    h = m.hidden_size
    q = m.attention_heads * m.head_dim
    kv = kv_heads_per_rank(m.kv_heads, tp) * m.head_dim
    width = m.intermediate_size if not m.is_moe else m.shared_intermediate
    qkv = 3 * h + q / tp + 2 * kv
    o = q / tp + h
    mlp = (2 * h + 2 * width / tp + width / tp + h) if width else 0
    return max_loras * rank * layers * (qkv + o + mlp)


def problems(m: ModelArch, tp: int, pp: int, dp: int, ep: bool, engine: str) -> list[str]:
    """vLLM's start-up refusals that come from the split, each with the fix."""
    out = []
    if m.attention_heads % tp:
        fits = [n for n in (1, 2, 4, 8, 16) if m.attention_heads % n == 0 and n != tp]
        out.append(
            HEADS_REFUSAL.format(heads=m.attention_heads, tp=tp)
            + f" (vLLM refuses to start; use a tensor-parallel size that divides {m.attention_heads}: "
            + ", ".join(map(str, fits))
            + (", or pipeline parallel for the rest" if fits else "")
            + ")"
        )
    if pp > m.layers:
        out.append(
            f"pipeline_parallel_size {pp} is more than the model's {m.layers} layers: a stage would hold no layer "
            f"(vLLM's get_pp_indices gives each stage layers // {pp} = 0); use at most {m.layers} stages"
        )
    if ep and m.is_moe and engine == "v1" and m.experts % (tp * dp):
        size = tp * dp
        divisors = [n for n in range(1, size + 1) if m.experts % n == 0]
        out.append(
            EXPERTS_REFUSAL.format(experts=m.experts, ep=size)
            + f" (expert parallel splits {m.experts} experts over TP x DP = {size} ranks; a V1 build refused this at "
            f"start-up: use TP x DP of {max(divisors)} or another divisor of {m.experts}, or turn expert parallel off)"
        )
    return out
