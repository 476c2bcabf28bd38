"""Does a model with its serving parameters fit a GPU? Weights, KV cache, runtime overhead, and what to change.

The memory model follows how vLLM budgets a GPU (its startup log prints the same terms: "total_gpu_memory x
gpu_memory_utilization = budget; model weights take W; non_torch_memory takes N; PyTorch activation peak memory
takes A; the rest of the memory reserved for KV Cache is K"):
  budget  = GPU memory x gpu_memory_utilization x tensor-parallel size
  weights = non-embedding parameters x bytes per weight (+ group scales for 4-bit formats)
            + embedding and lm_head parameters x 2 bytes (the 4/8-bit formats keep them in 16 bits)
  overhead = activation peak + non-torch memory, per GPU (x TP):
            activation peak = max_num_batched_tokens x hidden_size x 2 bytes x ACTIVATION_FACTOR   (estimate)
            non-torch memory = NON_TORCH_GIB                                                   (estimate)
  KV cache = budget - weights - overhead;  KV bytes per token = 2 x layers x KV heads x head dim x KV dtype bytes
  fits    = weights + overhead < budget and KV tokens >= max_model_len (else vLLM refuses to start:
            "max seq len is larger than the maximum number of tokens that can be stored in KV cache").
CUDA graphs are captured outside the budget, in the (1 - utilisation) share; too small a share is advice, not a failure.
All sizes in GiB = 2**30 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from gpufleet.sizing.models import ModelArch

from gpufleet.yamlload import load_file

GIB = 2**30
# Activation peak per batched token, as a multiple of one hidden vector in 16 bits. Estimate, calibrated on the
# vLLM startup log in vllm-project/vllm#13882 (Qwen2.5-7B, 4096 batched tokens: activation peak 1.42 GiB
# = 4096 x 3584 x 2 B x 50.7); 52 rounds that up. Models with a wider MLP per hidden unit need more.
ACTIVATION_FACTOR = 52
NON_TORCH_GIB = 0.1  # estimate: vLLM logs report 0.03-0.06 GiB of non-torch memory on one GPU (#13882: 0.03)
CUDA_GRAPHS_GIB = 0.5  # estimate (a planning margin, not a published figure) of the graph pool outside the budget: advice only
DTYPE_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4}
QUANT = Path(__file__).parent / "data" / "quantization.yaml"


@lru_cache(maxsize=1)
def formats() -> dict[str, dict]:
    return load_file(QUANT)["formats"]


def _cc(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


@dataclass(frozen=True)
class Serving:
    gpus: int = 1
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_model_len: int = 8192
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.90


@dataclass
class Fit:
    model: str
    gpu: str
    gpus: int
    dtype: str
    quantization: str | None
    fits: bool
    budget_gib: float
    weights_gib: float
    overhead_gib: float
    kv_cache_gib: float
    kv_bytes_per_token: int
    kv_tokens: int
    max_model_len: int
    max_concurrent_seqs: int
    problems: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def effective_dtype(model: ModelArch, gpu, dtype: str) -> tuple[str, str | None]:
    """(dtype vLLM runs, problem or None). 'auto' takes the checkpoint's dtype; vLLM casts bf16 to fp16 below 8.0."""
    if dtype == "auto":
        chosen = model.torch_dtype if model.torch_dtype in DTYPE_BYTES else "bfloat16"
        if chosen == "bfloat16" and gpu.cc < (8, 0):
            return "float16", None
        return chosen, None
    if dtype == "bfloat16" and gpu.cc < (8, 0):
        return dtype, f"bfloat16 needs compute capability >= 8.0; {gpu.name} has {gpu.compute_capability}: use dtype float16"
    return dtype, None


def weight_bytes(model: ModelArch, dtype: str, quantization: str | None) -> float:
    embed = model.embedding_parameters
    body = model.parameters_b * 1e9 - embed
    if quantization:
        q = formats()[quantization]
        return body * q["bits"] / 8 * (1 + q["group_overhead"]) + embed * 2
    return (body + embed) * DTYPE_BYTES[dtype]


def kv_bytes_per_token(model: ModelArch, dtype: str, kv_cache_dtype: str) -> int:
    kv = 1 if kv_cache_dtype.startswith("fp8") else DTYPE_BYTES[dtype]
    return 2 * model.layers * model.kv_heads * model.head_dim * kv


def _quant_problem(quantization: str | None, gpu) -> str | None:
    if quantization is None:
        return None
    if quantization not in formats():
        return f"unknown quantization {quantization!r}; one of {', '.join(formats())}"
    q = formats()[quantization]
    if gpu.cc < _cc(q["min_cc"]):
        return f"{quantization} needs compute capability >= {q['min_cc']} in vLLM; {gpu.name} has {gpu.compute_capability}"
    return None


def fit(model: ModelArch, gpu, s: Serving, gpu_kinds: dict | None = None, sizes: set[tuple[str, int]] | None = None) -> Fit:
    """The answer for one model x GPU x serving parameters. gpu_kinds (name -> GpuKind) lets advice name a bigger
    GPU; sizes, the (GPU, count per node) pairs a cloud sells, keeps advice to nodes one can buy (None: any)."""
    result = measure(model, gpu, s)
    result.advice = _advice(model, gpu, s, result, gpu_kinds or {}, sizes)
    if (1 - s.gpu_memory_utilization) * gpu.memory_gib < CUDA_GRAPHS_GIB:
        result.advice.append(
            f"only {(1 - s.gpu_memory_utilization) * gpu.memory_gib:.2f} GiB is left outside the budget for "
            f"CUDA graphs (about {CUDA_GRAPHS_GIB} GiB, estimate): lower gpu_memory_utilization or add --enforce-eager"
        )
    return result


def measure(model: ModelArch, gpu, s: Serving) -> Fit:
    """The numbers and the verdict, without advice."""
    dtype, dtype_problem = effective_dtype(model, gpu, s.dtype)
    problems = [p for p in (dtype_problem, _quant_problem(s.quantization, gpu)) if p]
    if s.kv_cache_dtype.startswith("fp8") and gpu.cc < (8, 0):
        problems.append(f"an fp8 KV cache needs compute capability >= 8.0 in vLLM; {gpu.name} has {gpu.compute_capability}")
    if model.max_positions and s.max_model_len > model.max_positions:
        problems.append(f"max_model_len {s.max_model_len} is above the model's max_position_embeddings ({model.max_positions})")
    weights = weight_bytes(model, dtype, s.quantization if s.quantization in formats() else None)
    budget = gpu.memory_gib * GIB * s.gpu_memory_utilization * s.gpus
    overhead = (s.max_num_batched_tokens * model.hidden_size * 2 * ACTIVATION_FACTOR + NON_TORCH_GIB * GIB) * s.gpus
    kv_cache = budget - weights - overhead
    per_token = kv_bytes_per_token(model, dtype, s.kv_cache_dtype)
    kv_tokens = max(0, int(kv_cache // per_token))
    concurrent = kv_tokens // s.max_model_len
    result = Fit(
        model=model.name,
        gpu=gpu.name,
        gpus=s.gpus,
        dtype=dtype,
        quantization=s.quantization,
        fits=False,
        budget_gib=budget / GIB,
        weights_gib=weights / GIB,
        overhead_gib=overhead / GIB,
        kv_cache_gib=kv_cache / GIB,
        kv_bytes_per_token=per_token,
        kv_tokens=kv_tokens,
        max_model_len=s.max_model_len,
        max_concurrent_seqs=concurrent,
        problems=problems,
    )
    result.assumptions = [
        f"budget = {gpu.memory_gib} GiB x {s.gpu_memory_utilization} x {s.gpus} GPU(s)",
        f"activation peak = {s.max_num_batched_tokens} batched tokens x {model.hidden_size} x 2 B x {ACTIVATION_FACTOR} (estimate)",
        f"non-torch memory {NON_TORCH_GIB} GiB per GPU (estimate)",
    ] + (["parameters estimated from config.json"] if model.parameters_estimated else [])
    if weights + overhead >= budget:
        problems.append(
            f"weights ({weights / GIB:.1f} GiB) and runtime overhead ({overhead / GIB:.1f} GiB) exceed the "
            f"{budget / GIB:.1f} GiB budget of {s.gpus}x {gpu.name} at gpu_memory_utilization {s.gpu_memory_utilization}"
        )
    elif kv_tokens < s.max_model_len:
        problems.append(
            f"the KV cache holds {kv_tokens} tokens ({kv_cache / GIB:.2f} GiB), fewer than max_model_len "
            f"{s.max_model_len}: vLLM would refuse to start"
        )
    result.fits = not problems
    return result


def _advice(model: ModelArch, gpu, s: Serving, r: Fit, kinds: dict, sizes: set | None) -> list[str]:
    if r.fits:
        out = []
        if r.max_concurrent_seqs < s.max_num_seqs:
            out.append(
                f"only {r.max_concurrent_seqs} sequences of max_model_len {s.max_model_len} fit at once (max_num_seqs is "
                f"{s.max_num_seqs}); shorter requests share the {r.kv_tokens}-token cache"
            )
        return out
    out: list[str] = []

    def ok(**changes) -> bool:
        return measure(model, changes.pop("gpu", gpu), replace(s, **changes)).fits

    if r.problems and any("bfloat16" in p for p in r.problems):
        out.append("use dtype float16 (or auto)")
    if any("max_position_embeddings" in p for p in r.problems):
        out.append(f"set max_model_len to at most {model.max_positions}")
    if r.weights_gib * GIB + r.overhead_gib * GIB < r.budget_gib * GIB and r.kv_tokens < s.max_model_len:
        fitting = (r.kv_tokens // 256) * 256
        if fitting >= 256:
            out.append(f"shorten max_model_len to {fitting} (what the KV cache holds)")
        if s.max_num_batched_tokens > s.max_model_len or s.max_num_batched_tokens > 2048:
            out.append("lower max_num_batched_tokens to shrink the activation peak")
    for q in ("awq", "gptq"):
        if (
            s.quantization is None
            and not _quant_problem(q, gpu)
            and ok(quantization=q, dtype="auto" if s.dtype == "bfloat16" and gpu.cc < (8, 0) else s.dtype)
        ):
            out.append(
                f"quantize: a 4-bit {q.upper()} checkpoint of this model fits ({q} needs compute capability {formats()[q]['min_cc']})"
            )
            break
    if s.kv_cache_dtype == "auto" and gpu.cc >= (8, 0) and ok(kv_cache_dtype="fp8"):
        out.append("an fp8 KV cache (kv_cache_dtype fp8) halves the cache per token and fits")

    def sold(name: str, n: int) -> bool:
        return sizes is None or (name, n) in sizes

    for tp in (2, 4, 8):
        if tp > s.gpus and sold(gpu.name, tp) and ok(gpus=tp):
            out.append(f"tensor-parallel over {tp} GPUs (gpu.count {tp}, tensor_parallel_size {tp}) fits")
            break
    bigger = sorted((k for k in kinds.values() if k.memory_gib > gpu.memory_gib), key=lambda k: k.memory_gib)
    for k in bigger:
        if sold(k.name, s.gpus) and ok(gpu=k):
            out.append(f"a bigger GPU: {k.name} ({k.memory_gib} GiB) fits with these settings")
            break
    return out or [_smallest_combination(model, gpu, s, kinds, sold)]


def _smallest_combination(model: ModelArch, gpu, s: Serving, kinds: dict, sold) -> str:
    """No single change fits: the least GPU memory (kind x count sold, with or without 4-bit weights) that does."""
    options = []
    for kind in {gpu.name: gpu, **kinds}.values():
        for n in (n for n in (1, 2, 4, 8) if sold(kind.name, n)):
            for q in (s.quantization, "awq", "gptq"):
                if q and _quant_problem(q, kind):
                    continue
                dtype = "float16" if s.dtype == "bfloat16" and kind.cc < (8, 0) else s.dtype
                if measure(model, kind, replace(s, gpus=n, quantization=q, dtype=dtype)).fits:
                    options.append((kind.memory_gib * n, n, kind.name, q))
    if not options:
        return "no GPU node size in the catalog (up to 8 GPUs) fits this model with these settings"
    _, n, name, q = min(options, key=lambda o: (o[0], o[1], o[3] is not None))
    return (
        f"no single change fits; the smallest that does: {n}x {name} (gpu.kind {name}, gpu.count {n}, tensor_parallel_size {n})"
        + (f" with a 4-bit {q.upper()} checkpoint" if q and q != s.quantization else "")
    )
