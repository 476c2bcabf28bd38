"""Does a model with its serving parameters fit a GPU? The memory terms of the vLLM the image pins, a verdict that
matches what vLLM does at startup, and what to change.

The terms follow vLLM's startup profiler (sizing/profiler.py has each formula and its source); everything is per
GPU, as vLLM logs it. vLLM refuses to start when the KV cache is not positive ("No available memory for the cache
blocks") or holds fewer tokens than max_model_len ("larger than the maximum number of tokens that can be stored in
KV cache"). Checked against published startup logs (sizing/data/calibration.yaml, tests/sizing/test_calibration.py).
All sizes in GiB = 2**30 bytes.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from msgspec import Struct, field
from msgspec.structs import asdict, replace

from gpufleet import inputs
from gpufleet.sizing import architectures, gguf_file, hybrid, parallel, profiler
from gpufleet.sizing.models import ModelArch
from gpufleet.sizing.profiler import GIB
from gpufleet.stacks import catalog

DTYPE_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4}
QUANT = Path(__file__).parent / "data" / "quantization.yaml"
# Generic per-GPU figures for a GPU the catalog lacks (--gpu-memory-gib / --compute-capability): the usable memory
# is what the user gives; non-torch memory and the rest are the generic estimates of profiler.py.


@lru_cache(maxsize=1)
def formats() -> dict[str, dict]:
    with inputs.shaped("sizing/data/quantization.yaml"):
        return inputs.load_mapping(QUANT, "sizing/data/quantization.yaml")["formats"]


def quant_format(quantization: str | None) -> dict:
    """The quantization.yaml entry of a format ({} for none or an unknown one): an unquantized model (most fleets)
    does not read the table."""
    return formats().get(quantization, {}) if quantization else {}


def known_format(quantization: str | None) -> str | None:
    """The format if quantization.yaml models it, else None."""
    return quantization if quantization and quantization in formats() else None


class Gpu(Struct, frozen=True):
    """One GPU as the memory model sees it: usable memory (what CUDA reports as total) and compute capability."""

    name: str
    compute_capability: str
    memory_gib: float  # usable memory per GPU
    memory_source: str
    memory_estimate: bool
    nominal_gib: float | None = None

    @property
    def cc(self) -> tuple[int, int]:
        return profiler.capability(self.compute_capability)


def usable_memory() -> dict[str, dict]:
    return catalog.usable_memory()  # read once per process with the rest of gpus.yaml


def as_gpu(kind) -> Gpu:
    """A catalog GpuKind (nominal memory) as a Gpu with its usable memory; a Gpu as is."""
    if isinstance(kind, Gpu):
        return kind
    row = usable_memory().get(kind.name)
    if row is None:  # a kind made up in code (tests): its memory_gib is taken as the usable figure
        return Gpu(kind.name, kind.compute_capability, float(kind.memory_gib), "given", True, float(kind.memory_gib))
    return Gpu(
        kind.name,
        kind.compute_capability,
        row["gib"],
        row["source"],
        row["quality"] != "published",
        float(kind.memory_gib),
    )


def custom_gpu(memory_gib: float, compute_capability: str) -> Gpu:
    return Gpu(
        f"GPU ({memory_gib:g} GiB, compute capability {compute_capability})",
        compute_capability,
        memory_gib,
        "given (--gpu-memory-gib)",
        False,
    )


class Serving(Struct, frozen=True):
    """Serving parameters; None takes what the pinned `vllm serve` does (model length: the model's maximum)."""

    gpus: int = 1  # tensor-parallel size
    pipeline_parallel: int = 1
    data_parallel: int = 1
    expert_parallel: bool = False
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    enforce_eager: bool = False
    cpu_offload_gb: float = 0.0
    vllm_version: str | None = None
    reserved_gib: float = 0.0  # memory other processes hold on each GPU (given, not predicted)
    max_loras: int = 0  # LoRA adapter slots vLLM preallocates (--max-loras with --enable-lora); 0: LoRA off
    max_lora_rank: int = 16  # --max-lora-rank (vLLM's default 16)
    engine: str | None = None  # "v0" / "v1" when the version is not known exactly (a log that names its engine)
    # a GGUF model's --hf-config-path: vLLM reads the config there, not from the file (not read here: the file's
    # metadata is sized)
    hf_config_path: str | None = None


class Fit(Struct):
    """What `plan fit` reports: the per-GPU budget term by term, the KV cache, the verdict and advice."""

    model: str
    gpu: str
    gpus: int
    dtype: str
    quantization: str | None
    vllm_version: str
    engine: str
    fits: bool
    usable_gib: float
    budget_gib: float  # per GPU: usable x gpu_memory_utilization
    weights_gib: float  # per GPU
    overhead_gib: float  # per GPU: non-torch + other processes + activation peak + CUDA graphs
    kv_cache_gib: float  # per GPU
    kv_bytes_per_token: int  # per GPU
    kv_tokens: int
    max_model_len: int
    max_concurrent_seqs: int
    max_concurrency: float
    verdict: str = "fits"  # "fits", "tight" (the verdict could go either way within the model's error) or "does not fit"
    kv_tokens_range: tuple[int, int] = (0, 0)  # low, high: the KV tokens within the model's stated error
    pipeline_parallel: int = 1
    data_parallel: int = 1
    expert_parallel: bool = False
    serving: dict = field(default_factory=dict)
    terms: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        # full precision: the table rounds these for display (2 decimals), so no figure it shows can contradict the JSON
        # (tests/test_formats_agree.py); rounding both would round twice
        out = asdict(self)
        out["terms"] = [t.to_json() for t in self.terms]
        out["kv_tokens_range"] = list(self.kv_tokens_range)
        out["per_gpu"] = "budget, weights, overhead, KV cache and terms are per GPU; KV tokens serve the whole group"
        return out


def effective_dtype(model: ModelArch, gpu, dtype: str) -> tuple[str, str | None]:
    """(dtype vLLM runs, problem or None). 'auto' takes the checkpoint's 16-bit dtype; a float32 checkpoint (or a dtype
    it does not know) runs in the GPU's preferred 16-bit type, bfloat16 from compute capability 8.0, else float16
    (vllm/config/model.py _resolve_auto_dtype: "Downcast for float32 models"; platforms/cuda.py supported_dtypes)."""
    if dtype == "auto":
        chosen = model.torch_dtype if model.torch_dtype in ("float16", "half", "bfloat16") else "bfloat16"
        if chosen == "bfloat16" and gpu.cc < (8, 0):
            return "float16", None
        return chosen, None
    if dtype == "bfloat16" and gpu.cc < (8, 0):
        return dtype, (
            f"Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu.name} GPU has "
            f"compute capability {gpu.compute_capability}. (vLLM refuses to start; use dtype float16)"
        )
    return dtype, None


def bits_per_weight(quantization: str, experts: bool = False) -> float:
    """Stored bits per quantized weight as vLLM keeps them: the values plus their group scales and zero points
    (quantization.yaml). experts: of a MoE model's routed experts, where the format keeps zero points its dense layers
    drop (gptq_marlin's expert_zero_bits)."""
    q = formats()[quantization]
    zero = q.get("expert_zero_bits", q["zero_bits"]) if experts else q["zero_bits"]
    bits = q["bits"] + ((q["scale_bits"] + zero) / q["group_size"] if q["group_size"] else 0)
    if q.get("second_group"):
        bits += q["second_scale_bits"] / (q["group_size"] * q["second_group"])
    return bits


def marlin_group_scale_bits(quantization: str | None, block: tuple[int, int] | None, cc: tuple[int, int] | None) -> float:
    """Bits per quantized weight that Marlin's group-wise scales add where vLLM runs a block-quantized checkpoint
    weight-only through Marlin (compute capability below the format's marlin_below_cc): one model-dtype scale per
    block_k input rows per output column (quantization.yaml, fp8). 0 elsewhere (no GPU named, native kernels, or no
    weight_block_size in the checkpoint's config)."""
    q = quant_format(quantization)
    if block is None or cc is None or "marlin_below_cc" not in q or cc >= profiler.capability(q["marlin_below_cc"]):
        return 0.0
    return q["marlin_scale_bits"] / block[1]


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def mxfp4_triton_expert_bytes(hidden: int, intermediate: int, layout: dict) -> int:
    """Bytes of one routed expert (gated: gate/up w13 and down w2) on one GPU as vLLM's Triton mxfp4 MoE backend holds
    it on compute capability 9.x, for the rank's intermediate size `intermediate` (quantization.yaml, mxfp4 layout
    triton_hopper: each padding and where vLLM / triton_kernels do it)."""
    inter = _round_up(intermediate, layout["intermediate_multiple"])
    (v_red, v_out), (s_out, s_red) = layout["value_align"], layout["scale_align"]
    values = _round_up(hidden // 2, v_red) * _round_up(2 * inter, v_out) + _round_up(inter // 2, v_red) * _round_up(hidden, v_out)
    scales = _round_up(2 * inter, s_out) * _round_up(hidden // 32, s_red) + _round_up(hidden, s_out) * _round_up(
        inter // 32, s_red
    )
    return values + scales + (2 * inter + hidden) * layout["bias_bytes"]


def _mxfp4_layout(quantization: str | None, cc: tuple[int, int] | None) -> dict | None:
    """The modelled storage layout of the format on this GPU (None: its plain bits per weight)."""
    if quantization is None or cc is None:
        return None
    for layout in (quant_format(quantization).get("layout") or {}).values():
        if profiler.capability(layout["cc_from"]) <= cc < profiler.capability(layout["cc_below"]):
            return layout
    return None


def rank_weight_bytes(
    model: ModelArch, dtype: str, quantization: str | None, s: Serving, cc: tuple[int, int] | None = None
) -> list[float]:
    """Bytes of weights on the heaviest GPU of each pipeline stage (cc: the GPU's compute capability, for a format
    whose layout depends on it; None takes the format's plain bits per weight)."""
    stages = parallel.rank_params(model, s.gpus, s.pipeline_parallel, s.data_parallel, s.expert_parallel)
    if model.weight_bytes_given is not None:  # a GGUF file: its tensors' own bytes, spread like the parameters
        per_parameter = model.weight_bytes_given / model.parameters
        return [(r.quantizable + r.kept) * per_parameter for r in stages]
    dense = DTYPE_BYTES[dtype]
    layout = _mxfp4_layout(quantization, cc) if model.gated_mlp and model.is_moe else None
    ep = s.expert_parallel and s.gpus * s.data_parallel > 1
    inter = model.expert_intermediate if ep else model.expert_intermediate // s.gpus
    fmt = known_format(quantization)
    q = quant_format(fmt)
    out = []
    for r in stages:
        if fmt and not q.get("from_file"):
            marlin = marlin_group_scale_bits(fmt, model.weight_block_size, cc)
            per = (bits_per_weight(fmt) + marlin) / 8
            per_expert = (bits_per_weight(fmt, experts=True) + marlin) / 8
            if layout is not None:  # expert-layers on the rank x one expert's bytes in the kernel's layout
                experts = r.expert / model.mlp_parameters(inter)
                out.append(
                    experts * mxfp4_triton_expert_bytes(model.hidden_size, inter, layout)
                    + (r.quantizable - r.expert + r.kept) * dense
                )
            elif q.get("experts_only"):
                out.append(r.expert * per + (r.quantizable - r.expert + r.kept) * dense)
            else:
                out.append((r.quantizable - r.expert) * per + r.expert * per_expert + r.kept * 2)
        else:
            out.append((r.quantizable + r.kept) * dense)
    return out


def offload_floor_bytes(model: ModelArch, dtype: str, s: Serving) -> list[float]:
    """Per stage, the weight bytes --cpu-offload-gb cannot move: vLLM offloads parameters of the decoder layers only
    (make_layers wraps each layer in maybe_offload_to_cpu, vllm/model_executor/models/utils.py), so the embedding, the
    LM head and the final norm stay on the GPU (16-bit in every format)."""
    if model.weight_bytes_given is not None:
        per_parameter = model.weight_bytes_given / model.parameters
    else:
        per_parameter = DTYPE_BYTES[dtype]
    stages = parallel.rank_params(model, s.gpus, s.pipeline_parallel, s.data_parallel, s.expert_parallel)
    return [r.outside * per_parameter for r in stages]


def gpu_weights_gib(weight_bytes: float, floor_bytes: float, cpu_offload_gb: float) -> float:
    """Weights left on the GPU after --cpu-offload-gb (GiB, as vLLM counts it: cpu_offload_gb x 2**30 bytes), which
    moves decoder-layer parameters only (offload_floor_bytes)."""
    return (weight_bytes - min(cpu_offload_gb * GIB, max(0.0, weight_bytes - floor_bytes))) / GIB


def offloaded_layer_bytes(
    model: ModelArch, dtype: str, quantization: str | None, s: Serving, cc: tuple[int, int] | None, eng
) -> dict[str, float]:
    """On the engines that copy an offloaded layer's weights onto the GPU for its forward (profiler.offload_copies:
    V0), the largest such copy on one GPU per kind of layer ("dense", "moe"; profiler.forward_peak). vLLM offloads the
    decoder layers' parameters in order until --cpu-offload-gb is reached (maybe_offload_to_cpu in make_layers), so
    the first layers go whole and one in part; a layer's bytes are its share of the stage's decoder-layer parameters
    (parallel.layer_sizes) times their bytes, an estimate under a format that sizes experts and attention apart.
    Nothing without --cpu-offload-gb or where the engine reads the weights in place."""
    out = {"dense": 0.0, "moe": 0.0}
    if not s.cpu_offload_gb or not profiler.offload_copies(eng):
        return out
    stages = parallel.stage_layers(model.layers, s.pipeline_parallel)
    per_stage = rank_weight_bytes(model, dtype, quantization, s, cc)
    floors = offload_floor_bytes(model, dtype, s)
    for ids, wbytes, floor in zip(stages, per_stage, floors, strict=True):
        sizes = parallel.layer_sizes(model, s.gpus, s.data_parallel, s.expert_parallel, ids)
        per_parameter = (wbytes - floor) / sum(p for _, p in sizes) if sizes else 0.0
        left = s.cpu_offload_gb * GIB
        for moe, params in sizes:
            if left <= 0:
                break
            moved = min(params * per_parameter, left)
            left -= moved
            kind = "moe" if moe else "dense"
            out[kind] = max(out[kind], moved)
    return out


def rope_cache_bytes(model: ModelArch, dtype: str) -> float:
    """The rotary embedding's cos/sin cache, a buffer vLLM allocates with the model on every GPU and counts in its
    weights (positions x rotary dims in the model dtype: RotaryEmbedding.__init__ casts the cache to it and registers
    it as a buffer, vllm/model_executor/layers/rotary_embedding.py; get_rope shares one per set of arguments). It is
    not a decoder-layer parameter, so --cpu-offload-gb leaves it on the GPU."""
    return model.rope_positions * model.rotary_dim * DTYPE_BYTES[dtype]


def mla_absorbed_bytes(model: ModelArch, dtype: str, quantization: str | None, tp: int, eng) -> float:
    """Per decoder layer on one GPU: the absorbed MLA decode matrices V0 0.7.x keeps beside the weights
    (profiler.mla_absorbs; data/vllm_engines.yaml mla_absorbed_weights): W_Q_UK and W_UV_O of the rank's heads in the
    activation dtype (1 B where fp8 weights are re-quantized), W_QR in the activation dtype. 0 elsewhere."""
    if not model.is_mla or not profiler.mla_absorbs(eng):
        return 0.0
    heads = model.attention_heads // tp
    q_in = model.q_lora_rank or model.hidden_size
    act = DTYPE_BYTES[dtype]
    absorbed = 1 if quantization and quantization.startswith("fp8") else act
    w_q_uk = q_in * heads * model.kv_lora_rank
    w_uv_o = heads * model.kv_lora_rank * model.hidden_size
    w_qr = q_in * heads * model.qk_rope_head_dim
    return (w_q_uk + w_uv_o) * absorbed + w_qr * act


def stage_weights_gib(
    model: ModelArch, dtype: str, quantization: str | None, s: Serving, cc: tuple[int, int] | None, eng
) -> list[float]:
    """Per pipeline stage, what vLLM logs as the weights of its heaviest GPU: the parameters (rank_weight_bytes) less
    --cpu-offload-gb (gpu_weights_gib), the rope cache and, on V0 0.7.x MLA, the absorbed decode matrices of the
    decoder layers still on the GPU (offloading moves a layer's weights and so where its absorbed matrices are made;
    a partly offloaded stage keeps them in proportion, an estimate)."""
    rope = rope_cache_bytes(model, dtype)
    absorbed = mla_absorbed_bytes(model, dtype, quantization, s.gpus, eng)
    out = []
    stages = parallel.stage_layers(model.layers, s.pipeline_parallel)
    per_stage = rank_weight_bytes(model, dtype, quantization, s, cc)
    floors = offload_floor_bytes(model, dtype, s)
    for ids, wbytes, floor in zip(stages, per_stage, floors, strict=True):
        params = gpu_weights_gib(wbytes, floor, s.cpu_offload_gb)
        movable = wbytes - floor
        on_gpu = (params * GIB - floor) / movable if movable > 0 else 1.0
        out.append(params + (rope + absorbed * len(ids) * on_gpu) / GIB)
    return out


def weight_bytes(model: ModelArch, dtype: str, quantization: str | None) -> float:
    """The whole checkpoint as vLLM holds it on one GPU (no parallelism)."""
    return rank_weight_bytes(model, dtype, quantization, Serving())[0]


def kv_bytes_per_token(
    model: ModelArch, dtype: str, kv_cache_dtype: str, gpus: int = 1, eng=None, layers: int | None = None
) -> int:
    """KV bytes per token on one GPU holding `layers` layers (all by default): KV heads are split over the
    tensor-parallel group (replicated below one each); MLA caches one latent per layer on every rank."""
    table = (eng.kv_dtypes if eng else {}) or {}
    per = table.get(kv_cache_dtype, {}).get("bytes") or (1 if kv_cache_dtype.startswith("fp8") else None)
    kv = per or DTYPE_BYTES[dtype]
    n = model.layers if layers is None else layers
    if model.is_mla:  # one latent per layer, padded where the engine pads it
        return n * profiler.mla_entry_bytes(model.kv_elements_per_token_per_layer(gpus) * kv, eng)
    return parallel.kv_elements_per_token(model, gpus, n) * kv


# The LoRA ranks vLLM takes (vllm/config/lora.py `MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]`, read in
# public copies of v0.26.0 and main; LoRAConfig.__post_init__'s `possible_max_ranks` before it held the same from 8 up)
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def lora_rank_problem(max_loras: int, rank: int) -> str | None:
    """vLLM's refusal of a --max-lora-rank outside the ranks its LoRA kernels are built for (with LoRA on)."""
    if not max_loras or rank in LORA_RANKS:
        return None
    up = next((r for r in LORA_RANKS if r > rank), None)
    return f"max_lora_rank ({rank}) must be one of {LORA_RANKS}. (vLLM refuses to start; " + (
        f"use max_lora_rank {up}, the next rank it takes, which holds adapters up to that rank)" if up else ")"
    )


BATCHED_REFUSAL = "max_num_batched_tokens ({batched}) must be greater than or equal to max_num_seqs ({seqs})."
# vLLM's words: SchedulerConfig._verify_args (vllm/config/scheduler.py; the stack spec refuses the same, stacks/spec.py)


def batched_problem(batched: int, seqs: int) -> str:
    """vLLM's refusal of a step budget smaller than the sequences it schedules (one token each), with the fix."""
    return BATCHED_REFUSAL.format(batched=batched, seqs=seqs) + (
        f" (vLLM refuses to start; raise max_num_batched_tokens to at least {seqs} or lower max_num_seqs to at most {batched})"
    )


def act_dtype_problem(quantization: str | None, dtype: str) -> str | None:
    """vLLM's refusal of an activation dtype the format's kernels do not take (quantization.yaml act_dtypes), for a
    --dtype given explicitly ('auto' takes the checkpoint's, which a quantized checkpoint sets to one it takes)."""
    allowed = quant_format(quantization).get("act_dtypes")
    if not allowed or dtype == "auto" or dtype in allowed:
        return None
    marlin = f"{quantization}_marlin"
    return (
        f"torch.{dtype} is not supported for quantization method {quantization}. Supported dtypes: "
        f"[{', '.join('torch.' + d for d in allowed)}] (vLLM refuses to start; use dtype {' or '.join(allowed)}"
        + (f", or quantization {marlin}, which takes bfloat16" if dtype == "bfloat16" and marlin in formats() else "")
        + ")"
    )


def checkpoint_method_of(quantization: str) -> str:
    """The quant_method of the checkpoints a format runs (quantization.yaml header, in_flight)."""
    return str(quant_format(quantization).get("serve_as") or quantization.removesuffix("_marlin"))


def checkpoint_problem(model: ModelArch, quantization: str | None) -> str | None:
    """vLLM's refusal of a --quantization naming another method than the checkpoint's quantization_config. vLLM prints
    the argument as given (ModelConfig._verify_quantization formats self.quantization: "(awq_marlin)", not "(awq)")."""
    if quantization is None or model.checkpoint_method is None or quantization not in formats():
        return None
    given = checkpoint_method_of(quantization)
    if given == model.checkpoint_method:
        return None
    return (
        f"Quantization method specified in the model config ({model.checkpoint_method}) does not match the quantization "
        f"method specified in the `quantization` argument ({quantization}). (vLLM refuses to start; drop --quantization: vLLM "
        f"runs the checkpoint's own {model.checkpoint_method})"
    )


# where vLLM takes gpu_memory_utilization of the GPU, per engine (vllm_engines.yaml `profiler` and `source`)
REQUESTED_SOURCE = {
    "v0": "V0 worker.determine_num_available_blocks: total_gpu_memory x gpu_memory_utilization; 0.10.0 vllm/worker/worker.py",
    "v1": "0.33.0 vllm/v1/worker/utils.py:724-726",
}


# vLLM's words for a GPU below a format's minimum (quantization.yaml `refusal`), the capabilities as vLLM prints them
CAPABILITY_REFUSALS = {
    "config": "The quantization method {q} is not supported for the current GPU. Minimum capability: {need}. "
    "Current capability: {have}.",
    "scheme": "Quantization scheme is not supported for the current GPU. Min capability: {need}. Current capability: {have}.",
}


def min_cc(quantization: str, version: str) -> str:
    """The compute capability vLLM `version` needs for the format: its row's min_cc, or the min_cc_from entry of the
    newest release at or before `version` (quantization.yaml)."""
    q = formats()[quantization]
    v = profiler.parse_version(version)
    later = [(profiler.parse_version(r), cc) for r, cc in (q.get("min_cc_from") or {}).items()]
    return max((e for e in later if e[0] <= v), default=(None, q["min_cc"]))[1]


def _quant_problem(quantization: str | None, gpu, version: str | None = None) -> str | None:
    """Why vLLM `version` (default: the pin of the recipe serving that GPU) does not run the format on the GPU."""
    if quantization is None:
        return None
    if quantization not in formats():
        return f"unknown quantization {quantization!r}; one of {', '.join(formats())}"
    version = version or profiler.version_for(gpu.name, None, gpu.cc)
    if refused := architectures.quantization_refusal(
        str(formats()[quantization].get("serve_as") or quantization), version, ours=True
    ):
        return refused
    need = min_cc(quantization, version)
    if gpu.cc >= profiler.capability(need):
        return None
    ours = f"{quantization} needs compute capability >= {need} in vLLM {version}; {gpu.name} has {gpu.compute_capability}"
    base = quantization.removesuffix("_marlin")
    other = base != quantization and base in formats() and gpu.cc >= profiler.capability(min_cc(base, version))
    fix = f"quantization {base} runs the same checkpoint there" if other else f"a GPU of compute capability {need} or newer"
    words = CAPABILITY_REFUSALS.get(formats()[quantization].get("refusal", ""))
    if words is None:
        return f"{ours}; {fix}"
    said = words.format(q=quantization, need=need.replace(".", ""), have=gpu.compute_capability.replace(".", ""))
    return f"{said} (vLLM {version} refuses to start: {ours}; {fix})"


def resolve(model: ModelArch, gpu: Gpu, s: Serving) -> tuple[Serving, profiler.Engine, list[str]]:
    """Fill what is not given with the pinned `vllm serve` defaults; (serving, engine, assumptions)."""
    version = profiler.version_for(gpu.name, s.vllm_version, gpu.cc)
    eng = profiler.engine(version, gpu.cc, s.engine)
    length = s.max_model_len or model.max_positions or 8192
    defaults, source = profiler.serve_defaults(version, eng, gpu.memory_gib, gpu.name, length)
    given = {k: getattr(s, k) for k in defaults}
    filled = replace(
        s, vllm_version=version, max_model_len=length, **{k: v if v is not None else defaults[k] for k, v in given.items()}
    )
    notes = []
    if (
        s.quantization is not None
        and model.checkpoint_method is None
        and model.weight_bytes_given is None
        and not quant_format(s.quantization).get("in_flight")
        and s.quantization in formats()
    ):
        notes.append(
            f"quantization {s.quantization}: sized as this model's {s.quantization} checkpoint; vLLM quantizes a "
            f"16-bit checkpoint itself only to fp8 or bitsandbytes, so serve a {s.quantization} checkpoint of it (give "
            "that as --model)"
        )
    if s.quantization is None and model.checkpoint_quantization:  # vLLM runs the checkpoint's own format
        runs = [q for q in model.checkpoint_quantization if profiler.capability(min_cc(q, version)) <= gpu.cc]
        filled = replace(filled, quantization=(runs or model.checkpoint_quantization[-1:])[0])
        notes.append(
            f"quantization {filled.quantization}: the checkpoint's quantization_config, which vLLM runs when "
            "--quantization is not given"
        )
    taken = [f"{k} {defaults[k]}" for k, v in given.items() if v is None]
    if taken:
        notes.append(f"defaults of `vllm serve` taken: {', '.join(taken)} ({source})")
    if s.max_model_len is None:
        notes.append(f"max_model_len {length}: the model's maximum, as vLLM does when it is not given")
    if s.hf_config_path and model.gguf_architecture:
        notes.append(f"config from --hf-config-path {s.hf_config_path} in vLLM (not read here: the file's metadata sized)")
    return filled, eng, notes


def fit(model: ModelArch, gpu, s: Serving, gpu_kinds: dict | None = None, sizes: set[tuple[str, int]] | None = None) -> Fit:
    """The answer for one model x GPU x serving parameters. gpu_kinds (name -> GpuKind) lets advice name a bigger
    GPU; sizes, the (GPU, count per node) pairs a cloud sells, keeps advice to nodes one can buy (None: any)."""
    gpu = as_gpu(gpu)
    result = measure(model, gpu, s)
    result.advice = _advice(model, gpu, s, result, gpu_kinds or {}, sizes)
    r = result.serving
    eng = profiler.engine(result.vllm_version, gpu.cc, s.engine)
    if not eng.cuda_graphs_in_budget and not r["enforce_eager"]:
        pool = profiler.graphs_outside_budget_gib(eng, r["max_num_seqs"], r["max_num_batched_tokens"], model.model_type)
        left = (1 - r["gpu_memory_utilization"]) * gpu.memory_gib
        if left < pool:
            result.advice.append(
                f"only {left:.2f} GiB per GPU is left outside the budget for CUDA graphs (about {pool:.2f} GiB, estimate): "
                "lower gpu_memory_utilization or add --enforce-eager"
            )
    return result


def _unsure(model: ModelArch, s: Serving, eng: profiler.Engine) -> list[str]:
    """Why the model's error may be larger than the calibrated one: the band widens and the verdict is at best "tight"."""
    out = []
    if model.parameters_estimated:
        out.append(f"the architecture {model.model_type!r} is not one whose structure this tool models")
    if model.weight_bytes_given is not None:
        out.append("weights from a GGUF file's tensors (vLLM's GGUF support is experimental)")
    if why := _gguf_config(model, s)[1]:
        out.append(why)
    newest = profiler.newest_pinned()
    if not profiler.known_version(s.vllm_version or ""):
        out.append(f"vLLM version {s.vllm_version!r} is not known exactly ({eng.name.upper()} assumed)")
    elif profiler.parse_version(s.vllm_version or "") > profiler.parse_version(newest):
        out.append(f"vLLM {s.vllm_version} is newer than the newest version this memory model follows ({newest})")
    if s.max_loras and model.is_moe:
        out.append("LoRA on MoE experts is not counted")
    if why := architectures.support(model.architectures, s.vllm_version or "").unsure:
        out.append(why)
    if _grouped_per_stage(model, eng, s.pipeline_parallel):
        out.append(
            "full and sliding-window layers under pipeline parallelism: vLLM's hybrid KV cache manager groups each "
            "stage's layers, with padding that can leave fewer tokens than full attention would, not modelled"
        )
    return out


def _gguf_config(model: ModelArch, s: Serving) -> tuple[str | None, str | None]:
    """(vLLM's refusal, why unsure) for the config of a GGUF file that vLLM `s.vllm_version` takes (gguf_file.py)."""
    version = s.vllm_version or ""
    if (
        model.gguf_architecture is None
        or known_format(s.quantization) != "gguf"  # advice trying another checkpoint (awq) of the model
        or s.hf_config_path
        or architectures.quantization_refusal("gguf", version)
    ):
        return None, None
    return gguf_file.config_check(model.gguf_architecture, version, profiler.transformers_pin(version))


def _grouped_per_stage(model: ModelArch, eng: profiler.Engine, pp: int) -> bool:
    """A mixed full / sliding-window model that the hybrid manager groups, but across pipeline stages (hybrid.py
    models one stage only)."""
    return pp > 1 and _hybrid_applies(model, eng, 1)


def sliding_counted_as_vllm(model: ModelArch, eng: profiler.Engine, pp: int) -> bool:
    """The KV tokens of this model follow vLLM's own count (no sliding window, or one vLLM holds as modelled)."""
    return not _safe_side(model, eng, pp)


def _safe_side(model: ModelArch, eng: profiler.Engine, pp: int) -> list[str]:
    """Errors on the safe side only, which widen the band but leave "fits" standing (sliding windows counted as full
    attention where sizing/hybrid.py does not model them: vLLM V1 has more KV room than that, never less)."""
    if (
        model.sliding_layers
        and eng.name == "v1"
        and not _hybrid_applies(model, eng, pp)
        and not _grouped_per_stage(model, eng, pp)
    ):
        v = profiler.parse_version(eng.version)
        if model.sliding_layers < model.layers and v < profiler.parse_version(profiler.hybrid_kv_cache()["from"]):
            return []  # this V1 turns every sliding-window layer into a full-attention one: counted as it counts them
        return ["sliding-window layers: vLLM V1 caches only the window for them; counted here as full attention"]
    return []


def _hybrid_applies(model: ModelArch, eng: profiler.Engine, pp: int) -> bool:
    return hybrid.applies(model.layers, model.sliding_layers, eng.version, eng.name, pp)


def capacity_of(model: ModelArch, s: Serving, eng: profiler.Engine, pp: int, per_token: int):
    """KV GiB per GPU -> the capacity vLLM reports: whole blocks of `per_token` bytes, or the hybrid manager's groups.
    `s` is resolved (fit.resolve: its lengths are set)."""
    length, batched = s.max_model_len, s.max_num_batched_tokens
    assert length is not None and batched is not None
    if per_token and _hybrid_applies(model, eng, pp):
        layer_bytes = per_token // model.layers

        def grouped(gib: float) -> hybrid.Capacity:
            return hybrid.capacity(
                gib * GIB, layer_bytes, model.layers, model.sliding_layers, model.sliding_window,
                length, batched, eng.version,
            )  # fmt: skip

        return grouped
    block = profiler.BLOCK_SIZE * per_token

    def whole_blocks(gib: float) -> hybrid.Capacity:
        tokens = max(0, int(gib * GIB // block)) * profiler.BLOCK_SIZE if block else 0
        return hybrid.Capacity(tokens, tokens / length, length * per_token, tokens, "")

    return whole_blocks


def measure(model: ModelArch, gpu, s: Serving) -> Fit:
    """The numbers, the terms and the verdict, without advice."""
    gpu = as_gpu(gpu)
    batched_given = s.max_num_batched_tokens is not None
    s, eng, notes = resolve(model, gpu, s)
    # resolve fills every field that None leaves to `vllm serve` (version, length and the serve defaults)
    assert s.vllm_version is not None and s.max_model_len is not None and s.gpu_memory_utilization is not None
    assert s.max_num_seqs is not None and s.max_num_batched_tokens is not None
    dtype, dtype_problem = effective_dtype(model, gpu, s.dtype)
    quant = known_format(s.quantization)
    if quant == "gguf" and model.weight_bytes_given is None:
        dtype_problem = (dtype_problem + "; " if dtype_problem else "") + "quantization gguf: give the .gguf file as --model"
    # dict.fromkeys: once each; the checkpoint's method is also the resolved --quantization, so a release that does not
    # take it would otherwise be refused twice in the same words (gpt-oss's mxfp4 before 0.10.1)
    problems = list(
        dict.fromkeys(
            p
            for p in (
                profiler.wheel_problem(s.vllm_version, gpu.cc),
                dtype_problem,
                architectures.support(model.architectures, s.vllm_version).refused,
                architectures.pipeline_refusal(model.architectures, s.vllm_version, s.pipeline_parallel),
                checkpoint_problem(model, s.quantization),
                _gguf_config(model, s)[0],
                architectures.quantization_refusal(model.checkpoint_method, s.vllm_version) if model.checkpoint_method else None,
                _quant_problem(s.quantization, gpu, s.vllm_version),
                act_dtype_problem(s.quantization, s.dtype),
            )
            if p
        )
    )
    problems += parallel.problems(model, s.gpus, s.pipeline_parallel, s.data_parallel, s.expert_parallel, eng.name)
    if p := profiler.kv_dtype_problem(eng, s.kv_cache_dtype, gpu.cc, gpu.name):
        problems.append(p)
    others, counted = profiler.other_processes(s.reserved_gib, eng)
    if not counted and (
        p := profiler.reserved_problem(s.reserved_gib, gpu.memory_gib, gpu.memory_gib * s.gpu_memory_utilization, eng)
    ):
        problems.append(p)
    if p := lora_rank_problem(s.max_loras, s.max_lora_rank):
        problems.append(p)
    if batched_given and s.max_num_batched_tokens < s.max_num_seqs:
        problems.append(batched_problem(s.max_num_batched_tokens, s.max_num_seqs))
    if model.max_positions and s.max_model_len > model.max_positions:
        problems.append(
            f"max_model_len {s.max_model_len} is above the model's max_position_embeddings ({model.max_positions}); "
            f"give --max-model-len {model.max_positions} or less"
        )
    n, pp = s.gpus, s.pipeline_parallel
    world = n * pp
    usable = profiler.Term("usable_memory", gpu.memory_gib, gpu.memory_source, gpu.memory_estimate)
    requested = profiler.Term(
        "requested",
        gpu.memory_gib * s.gpu_memory_utilization,
        f"usable x gpu_memory_utilization {s.gpu_memory_utilization} ({REQUESTED_SOURCE[eng.name]})",
        gpu.memory_estimate,
    )
    stages = parallel.stage_layers(model.layers, pp)
    offloaded = s.cpu_offload_gb
    quantized_checkpoint = model.checkpoint_method is not None  # vLLM's is_quantized: the checkpoint's own config
    if offloaded and (
        ignored := profiler.offload_ignored(s.vllm_version, model.architectures, model.is_moe, quantized_checkpoint)
    ):
        notes.append(f"cpu_offload_gb {offloaded}: {ignored}")
        offloaded = 0.0
    per_stage = stage_weights_gib(model, dtype, quant, replace(s, cpu_offload_gb=offloaded), gpu.cc, eng)
    lora_dtype = DTYPE_BYTES[dtype]
    lora_counted = profiler.lora_in_budget(eng)  # V0 before 0.8.0 leaves the slots out of its KV budget
    layout = f"TP {n}" + (f" x PP {pp}" if pp > 1 else "") + (f" x DP {s.data_parallel}" if s.data_parallel > 1 else "")
    layout += " with expert parallel" if s.expert_parallel and model.is_moe else ""
    non_torch = profiler.non_torch_gib(world, eng, gpu.cc)
    copied = offloaded_layer_bytes(model, dtype, quant, replace(s, cpu_offload_gb=offloaded), gpu.cc, eng)
    forward = profiler.forward_activation(
        s.max_num_batched_tokens, model, n, DTYPE_BYTES[dtype], s.vllm_version, quant, gpu.cc, s.expert_parallel, copied
    )
    sampler = profiler.sampler_warmup(s.max_num_seqs, model.vocab_size, eng.name)
    peak = profiler.Term(
        "activation_peak",
        max(forward.gib, sampler.gib),
        "max(activation_forward, sampler_warmup): they run one after the other",
        True,
    )
    graphs = profiler.cuda_graphs(eng, s.enforce_eager, s.max_num_seqs, s.max_num_batched_tokens, model.model_type)
    overhead = non_torch.gib + others.gib + peak.gib + graphs.gib
    # per stage: weights, KV memory and tokens; vLLM sizes the cache by the stage with the fewest blocks
    rows = []
    for ids, w in zip(stages, per_stage, strict=True):
        lora = parallel.lora_parameters_per_rank(model, n, len(ids), s.max_loras, s.max_lora_rank) * lora_dtype
        kv_gib = requested.gib - w - (lora / GIB if lora_counted else 0.0) - overhead
        per_token = kv_bytes_per_token(model, dtype, s.kv_cache_dtype, n, eng, len(ids))
        tokens = max(0, int(kv_gib * GIB // (profiler.BLOCK_SIZE * per_token))) * profiler.BLOCK_SIZE if per_token else 0
        rows.append((tokens, w, lora / GIB, kv_gib, per_token, len(ids)))
    # a stage without layers (pipeline_parallel_size above the layers, refused above) holds no KV cache: it does not set
    # the token count (it made 0 tokens and a false "no KV cache" problem beside the refusal)
    kv_tokens, w_gib, lora_gib, kv_gib, per_token, stage_n = min(r for r in rows if r[5] or not any(x[5] for x in rows))
    tokens_of = capacity_of(model, s, eng, pp, per_token)
    cap = tokens_of(kv_gib)
    kv_tokens = cap.tokens if per_token else kv_tokens
    weights = profiler.Term(
        "weights",
        w_gib,
        f"{model.parameters_b:.2f}B parameters as {s.quantization or dtype}, {layout}"
        + (f": the stage of {stage_n} layers with the fewest KV blocks" if pp > 1 else "")
        + (f" - cpu_offload_gb {offloaded}" if offloaded else "")
        + f", + rope cos/sin cache {rope_cache_bytes(model, dtype) / GIB:.4f} GiB"
        + (" + MLA absorbed decode matrices (V0 0.7.x)" if mla_absorbed_bytes(model, dtype, quant, n, eng) else "")
        + (" (parameters estimated: architecture not modelled)" if model.parameters_estimated else ""),
        bool(quant) or model.parameters_estimated,
    )
    lora_term = profiler.Term(
        "lora",
        lora_gib,
        f"{s.max_loras} adapter slots of rank {s.max_lora_rank} preallocated on qkv/o/gate_up/down"
        + (
            ""
            if lora_counted
            else f" (vLLM {s.vllm_version} V0 allocates them after measuring the weights and does not take them from "
            "the KV cache: they use memory beyond gpu_memory_utilization; vllm#14450)"
        )
        if s.max_loras
        else "LoRA off (--max-loras 0)",
        False,
    )
    kv = profiler.Term(
        "kv_cache",
        kv_gib,
        "requested - weights - lora - non_torch - other_processes - activation_peak - cuda_graphs"
        if lora_counted or not s.max_loras
        else "requested - weights - non_torch - other_processes - activation_peak - cuda_graphs (LoRA slots outside "
        "the budget at this version)",
        True,
    )
    unsure = _unsure(model, s, eng)
    widened = unsure + _safe_side(model, eng, pp)
    low, high, band = _token_range(kv_gib, w_gib, tokens_of, bool(widened))
    result = Fit(
        model=model.name,
        gpu=gpu.name,
        gpus=n,
        dtype=dtype,
        quantization=s.quantization,
        vllm_version=s.vllm_version,
        engine=eng.name.upper(),
        fits=False,
        usable_gib=gpu.memory_gib,
        budget_gib=requested.gib,
        weights_gib=w_gib,
        overhead_gib=overhead + (lora_gib if lora_counted else 0.0),
        kv_cache_gib=kv_gib,
        kv_bytes_per_token=per_token,
        kv_tokens=kv_tokens,
        max_model_len=s.max_model_len,
        max_concurrent_seqs=int(cap.concurrency),
        max_concurrency=cap.concurrency,
        kv_tokens_range=(low, high),
        pipeline_parallel=pp,
        data_parallel=s.data_parallel,
        expert_parallel=s.expert_parallel,
        serving={
            "gpu_memory_utilization": s.gpu_memory_utilization,
            "max_num_seqs": s.max_num_seqs,
            "max_num_batched_tokens": s.max_num_batched_tokens,
            "kv_cache_dtype": s.kv_cache_dtype,
            "enforce_eager": s.enforce_eager,
            "cpu_offload_gb": s.cpu_offload_gb,
            "reserved_gib": s.reserved_gib,
            "max_loras": s.max_loras,
            "max_lora_rank": s.max_lora_rank,
        },
        terms=[usable, requested, weights, lora_term, non_torch, others, forward, sampler, peak, graphs, kv],
        problems=problems,
        assumptions=notes
        + [f"{t.name} {t.gib:.2f} GiB per GPU: {t.source}" for t in (non_torch, peak, graphs) if t.estimate]
        + list(model.notes)
        + ([f"KV cache held by vLLM {eng.version}'s hybrid manager: {cap.layout} (sizing/hybrid.py)"] if cap.layout else [])
        + [f"KV tokens {low}-{high} within the model's error (+-{band:.2f} GiB per GPU)"],
    )
    if s.max_loras and not lora_counted:
        result.assumptions.append(
            f"LoRA slots {lora_gib:.2f} GiB per GPU not taken from the KV cache: vLLM {s.vllm_version} (V0 before 0.8.0) "
            "leaves them out of its budget (vllm#14450), so they use memory beyond gpu_memory_utilization"
        )
        if requested.gib + lora_gib > gpu.memory_gib:
            problems.append(
                f"the {requested.gib:.2f} GiB budget and the LoRA slots ({lora_gib:.2f} GiB, outside the budget in "
                f"vLLM {s.vllm_version}) exceed the GPU's {gpu.memory_gib} GiB: allocating the KV cache would run out "
                "of memory; lower gpu_memory_utilization"
            )
    structural = bool(problems)
    memory_problem = None
    if kv_gib <= 0 or kv_tokens == 0:
        memory_problem = (
            f"weights ({w_gib:.2f} GiB) and runtime overhead ({result.overhead_gib:.2f} GiB) leave no KV cache in the "
            f"{requested.gib:.2f} GiB budget per GPU ({gpu.memory_gib} GiB x {s.gpu_memory_utilization}) of "
            f"{world}x {gpu.name}: vLLM would stop with 'No available memory for the cache blocks' (or run out of "
            "memory loading the weights); split the weights over more GPUs (--gpus), take a smaller checkpoint "
            "(--quantization) or a GPU with more memory"
        )
    elif (cap.needed_bytes > kv_gib * GIB) if cap.layout else (kv_tokens < s.max_model_len):
        memory_problem = _too_short(eng, s.max_model_len, kv_gib, cap)
    if memory_problem:
        problems.append(memory_problem)
    warm = _warmup(model, gpu, s, eng, world, counted, sampler.gib)
    warm_problem, warm_risk = _warmup_text(warm, s) if warm else (None, None)
    if warm_problem and not memory_problem:
        problems.append(warm_problem)
    result.fits = not problems
    if structural:
        result.verdict = "does not fit"
    elif memory_problem:
        result.verdict = "tight" if high >= s.max_model_len else "does not fit"
    elif warm_problem:
        result.verdict = "does not fit"
    else:
        result.verdict = "tight" if low < s.max_model_len or warm_risk or unsure else "fits"
    if warm_risk and result.verdict == "tight":
        result.assumptions.append(warm_risk)
    if result.verdict == "tight":  # each cause that made it so, not the KV range alone
        causes = []
        if memory_problem or low < s.max_model_len:
            causes.append(
                f"the KV cache holds {low}-{high} tokens within the model's error, max_model_len is {s.max_model_len}"
                + (f" ({'; '.join(widened)})" if widened else "")
            )
        elif unsure:
            causes.append(f"the model is unsure here ({'; '.join(unsure)}): {low}-{high} KV tokens within its error")
        if warm_risk:
            causes.append(f"the {WARMUP_RISK} after the KV cache may not fit (above)")
        result.assumptions.append("tight: " + "; ".join(causes))
    return result


WARMUP_RISK = "sampler warm-up"


def _warmup(model: ModelArch, gpu: Gpu, s: Serving, eng: profiler.Engine, world: int, counted: bool, sampler_gib: float):
    """The V1 sampler warm-up after the KV cache (profiler.sampler_warmup_after_kv), or None (V0)."""
    assert s.gpu_memory_utilization is not None and s.max_num_seqs is not None
    outside = not eng.cuda_graphs_in_budget and not s.enforce_eager
    assert s.max_num_batched_tokens is not None
    graphs = (
        profiler.graphs_outside_budget_gib(eng, s.max_num_seqs, s.max_num_batched_tokens, model.model_type) if outside else 0.0
    )
    unbudgeted = 0.0 if counted else s.reserved_gib
    return profiler.sampler_warmup_after_kv(
        eng, gpu.memory_gib, s.gpu_memory_utilization, unbudgeted, world, graphs, sampler_gib, gpu.cc
    )


def _warmup_text(w: profiler.Warmup, s: Serving) -> tuple[str | None, str | None]:
    """(problem, risk): vLLM's words when the warm-up cannot fit outside the budget, or why it may not."""
    sums = (
        f"{w.outside_gib:.2f} GiB per GPU outside the budget (usable x (1 - gpu_memory_utilization {s.gpu_memory_utilization})) "
        f"less the CUDA context ({w.context_gib:.2f}, estimate) and graphs captured outside the budget ({w.graphs_gib:.2f}, "
        f"estimate) leaves {w.margin_gib:.2f} GiB for the sampler warm-up of {s.max_num_seqs} dummy requests "
        f"({w.sampler_gib:.2f} GiB, estimate), which vLLM V1 runs after allocating the KV cache"
    )
    fix = "lower max_num_seqs or gpu_memory_utilization"
    words = (
        f"CUDA out of memory occurred when warming up sampler with {s.max_num_seqs} dummy requests. Please try lowering "
        "`max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
    )
    if w.margin_gib < 0:
        return f"{words} ({sums}; {fix})", None
    if w.margin_gib < w.sampler_gib:
        return (
            None,
            f"{WARMUP_RISK}: {sums}; the warm-up can need up to that again (allocator fragmentation): vLLM may stop with '{words}' ({fix})",
        )
    if w.margin_measured_gib < w.sampler_gib:
        return (
            None,
            f"{WARMUP_RISK}: {sums}; the CUDA context of more than two GPUs below compute capability 9.0 is not measured "
            f"(the one-GPU figure is taken); with several H100s' {w.context_measured_gib:.2f} GiB the graphs and the "
            f"warm-up would not fit outside the budget (vllm#17469 ran out of memory there) ({fix}, or add --enforce-eager)",
        )
    return None, None


# The model's stated error (tests/sizing/test_calibration.py asserts it on every log): KV cache within 10 % (or
# 0.2 GiB) and weights within 2 %; where the model is unsure (architecture not modelled, version not known exactly,
# GGUF, sliding windows on V1), UNSURE_FACTOR times that.
KV_ERROR, KV_ERROR_GIB, WEIGHT_ERROR, UNSURE_FACTOR = 0.10, 0.2, 0.02, 2.5


def _token_range(kv_gib: float, weights_gib: float, tokens_of, unsure: bool) -> tuple[int, int, float]:
    band = max(KV_ERROR * abs(kv_gib), KV_ERROR_GIB, WEIGHT_ERROR * weights_gib) * (UNSURE_FACTOR if unsure else 1)
    return tokens_of(kv_gib - band).tokens, tokens_of(kv_gib + band).tokens, band


def _too_short(eng: profiler.Engine, max_len: int, kv_gib: float, cap: hybrid.Capacity) -> str:
    """vLLM's refusal when the KV cache cannot hold one max_model_len request, in the engine's words."""
    if eng.name == "v1":
        return (
            f"To serve at least one request with the model's max seq len ({max_len}), ({cap.needed_bytes / GIB:.2f} GiB "
            f"KV cache is needed, which is larger than the available KV cache memory ({kv_gib:.2f} GiB). Based on the "
            f"available memory, the estimated maximum model length is {cap.max_len}. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. (vLLM V1 refuses to start)"
        )
    return (
        f"The model's max seq len ({max_len}) is larger than the maximum number of tokens that can be stored in KV "
        f"cache ({cap.tokens}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
        "the engine. (vLLM V0 refuses to start)"
    )


def _advice(model: ModelArch, gpu: Gpu, s: Serving, r: Fit, kinds: dict, sizes: set | None) -> list[str]:
    seqs, batched = r.serving["max_num_seqs"], r.serving["max_num_batched_tokens"]
    out: list[str] = []
    if r.fits:
        if r.max_concurrent_seqs < seqs:
            out.append(
                f"only {r.max_concurrent_seqs} sequences of max_model_len {r.max_model_len} fit at once (max_num_seqs is "
                f"{seqs}); shorter requests share the {r.kv_tokens}-token cache"
            )
        return out

    def ok(**changes) -> bool:
        return measure(model, changes.pop("gpu", gpu), replace(s, **changes)).fits

    # A refusal a changed setting lifts: that change, checked like every piece of advice (a bigger GPU cannot fix it)
    if profiler.wheel_problem(r.vllm_version, gpu.cc):
        runs = sorted((v for v in profiler.pins() if not profiler.wheel_problem(v, gpu.cc)), key=profiler.parse_version)
        if version := next((v for v in reversed(runs) if ok(vllm_version=v)), None):
            out.append(
                f"vLLM {version} (an image recipe's pin whose wheel runs on compute capability {gpu.compute_capability}) fits"
            )
    if checkpoint_problem(model, s.quantization) and ok(quantization=None):
        out.append(f"drop --quantization (vLLM runs the checkpoint's own {model.checkpoint_method}) and it fits")
    if any(p.startswith(gguf_file.REFUSED) for p in r.problems) and ok(hf_config_path="(the original repository)"):
        out.append("give --hf-config-path with the original model's repository (vLLM reads the config there) and it fits")
    if lora_rank_problem(s.max_loras, s.max_lora_rank):
        rank = next((x for x in LORA_RANKS if x > s.max_lora_rank and ok(max_lora_rank=x)), None)
        if rank is not None:
            out.append(f"max_lora_rank {rank} (the next rank vLLM takes; it holds adapters up to that rank) fits")
    if s.expert_parallel and any(p.startswith(parallel.EXPERTS_REFUSAL.split("{")[0]) for p in r.problems):
        if ok(expert_parallel=False):
            out.append("turn expert parallel off (each expert is then split over the tensor-parallel ranks) and it fits")
        near = sorted((d for d in (1, 2, 4, 8) if d != s.data_parallel), key=lambda d: (abs(d - s.data_parallel), d))
        dp = next((d for d in near if ok(data_parallel=d)), None)
        if dp is not None:
            out.append(f"data_parallel_size {dp} (the experts split over TP x DP = {s.gpus * dp} ranks) fits")
    if any("Bfloat16 is only supported" in p for p in r.problems):
        if ok(dtype="float16"):  # not enough alone: the combination below says float16 with what else it needs
            out.append("use dtype float16 (or auto) and it fits")
    elif act_dtype_problem(s.quantization, s.dtype):  # the format's kernels refuse the dtype: name the change that fits
        assert s.quantization is not None
        taken = next((d for d in formats()[s.quantization]["act_dtypes"] if ok(dtype=d)), None)
        if taken is not None:
            out.append(f"use dtype {taken} (what the {s.quantization} kernels take) and it fits")
        marlin = f"{s.quantization}_marlin"
        if marlin in formats() and not _quant_problem(marlin, gpu, r.vllm_version) and ok(quantization=marlin):
            out.append(f"quantization {marlin} takes {s.dtype} and fits")
    if any("held by other processes" in p for p in r.problems):
        most = int((gpu.memory_gib - s.reserved_gib) / gpu.memory_gib * 100) / 100
        util = next((u for u in _lower_utilizations(most) if ok(gpu_memory_utilization=u)), None)
        if util is not None:
            out.append(
                f"lower gpu_memory_utilization to {util} (what is free beside the other processes"
                + (", less the sampler warm-up's headroom" if util < most else "")
                + ") and it fits"
            )
    if any("warming up sampler" in p for p in r.problems):
        util = next(
            (u for u in _lower_utilizations(r.serving["gpu_memory_utilization"] - 0.01) if ok(gpu_memory_utilization=u)), None
        )
        seqs = next((n for n in (512, 256, 128, 64, 32, 16) if n < r.serving["max_num_seqs"] and ok(max_num_seqs=n)), None)
        if util is not None:
            out.append(f"lower gpu_memory_utilization to {util} and the sampler warm-up fits outside the budget")
        if seqs is not None:
            out.append(f"lower max_num_seqs to {seqs} and the sampler warm-up fits")
    if any(p.startswith(BATCHED_REFUSAL.split("(")[0]) for p in r.problems) and ok(max_num_batched_tokens=seqs):
        out.append(f"raise max_num_batched_tokens to {seqs} (max_num_seqs) and it fits")
    if s.pipeline_parallel > model.layers and ok(pipeline_parallel=model.layers):
        out.append(f"pipeline_parallel_size {model.layers} (one layer per stage) fits")
    if any("max_position_embeddings" in p for p in r.problems):
        out.append(f"set max_model_len to at most {model.max_positions}")
    if r.kv_cache_gib > 0 and r.kv_tokens < r.max_model_len:
        fitting = (r.kv_tokens // 256) * 256
        if fitting >= 256:
            out.append(f"shorten max_model_len to {fitting} (what the KV cache holds)")
        if batched > 2048:
            out.append("lower max_num_batched_tokens to shrink the activation peak")
    for q in ("awq", "gptq"):
        dtype = "auto" if s.dtype == "bfloat16" and (gpu.cc < (8, 0) or act_dtype_problem(q, s.dtype)) else s.dtype
        if s.quantization is None and not _quant_problem(q, gpu, r.vllm_version) and ok(quantization=q, dtype=dtype):
            out.append(
                f"quantize: a 4-bit {q.upper()} checkpoint of this model fits ({q} needs compute capability "
                f"{min_cc(q, r.vllm_version)})"
                + (f", with dtype {dtype} (float16 here) instead of {s.dtype}" if dtype != s.dtype else "")
            )
            break
    eng = profiler.engine(r.vllm_version, gpu.cc)
    if s.kv_cache_dtype == "auto" and not profiler.kv_dtype_problem(eng, "fp8", gpu.cc, gpu.name) and ok(kv_cache_dtype="fp8"):
        out.append("an fp8 KV cache (kv_cache_dtype fp8) halves the cache per token and fits")

    def sold(name: str, n: int) -> bool:
        return sizes is None or (name, n) in sizes

    # more GPUs first (memory), then fewer (a size that divides the heads)
    for tp in [t for t in (2, 4, 8) if t > s.gpus] + [t for t in (4, 2, 1) if t < s.gpus]:
        if sold(gpu.name, tp) and ok(gpus=tp):
            gpus = f"{tp} GPU" + ("s" if tp > 1 else "")
            out.append(f"tensor-parallel over {gpus} (gpu.count {tp}, tensor_parallel_size {tp}) fits")
            break
    bigger = sorted((as_gpu(k) for k in kinds.values()), key=lambda k: k.memory_gib)
    for k in (k for k in bigger if k.memory_gib > gpu.memory_gib):
        if sold(k.name, s.gpus) and (other := measure(model, k, s)).fits:
            pin = "" if other.vllm_version == r.vllm_version else f" on vLLM {other.vllm_version}, the version its image pins"
            out.append(f"a bigger GPU: {k.name} ({k.memory_gib} GiB usable) fits with these settings{pin}")
            break
    return out or [_smallest_combination(model, gpu, s, kinds, sold)]


def _lower_utilizations(start: float, steps: int = 10) -> list[float]:
    """gpu_memory_utilization values to try, from `start` down in 0.01 steps (at least 0.05)."""
    return [u for u in (round(start - 0.01 * k, 2) for k in range(steps + 1)) if u >= 0.05]


def _smallest_combination(model: ModelArch, gpu: Gpu, s: Serving, kinds: dict, sold) -> str:
    """No single change fits: the least GPU memory (kind x count sold, with or without 4-bit weights) that does."""
    options = []
    for kind in {gpu.name: gpu, **{k: as_gpu(v) for k, v in kinds.items()}}.values():
        for n in (n for n in (1, 2, 4, 8) if sold(kind.name, n)):
            for q in (s.quantization, "awq", "gptq"):
                if q and _quant_problem(q, kind, s.vllm_version):
                    continue
                dtype = "float16" if s.dtype == "bfloat16" and (kind.cc < (8, 0) or act_dtype_problem(q, s.dtype)) else s.dtype
                if measure(model, kind, replace(s, gpus=n, quantization=q, dtype=dtype)).fits:
                    options.append((kind.memory_gib * n, n, kind.name, q, dtype))
    if not options:
        return "no GPU node size in the catalog (up to 8 GPUs) fits this model with these settings"
    _, n, name, q, dtype = min(options, key=lambda o: (o[0], o[1], o[3] is not None))
    return (
        f"no single change fits; the smallest that does: {n}x {name} (gpu.kind {name}, gpu.count {n}, tensor_parallel_size {n})"
        + (f" with a 4-bit {q.upper()} checkpoint" if q and q != s.quantization else "")
        + (f", dtype {dtype}" if dtype != s.dtype else "")
    )
