"""How the vLLM an image pins budgets one GPU's memory, term by term, as its startup profiler does.

Engine facts (which profiler a version runs, its KV cache dtypes, its `vllm serve` defaults) are data with
source lines in data/vllm_engines.yaml; usable memory per GPU kind is in stacks/data/gpus.yaml (usable_memory).
The constants below are the estimates that no source file fixes; each says which logs it comes from.

Per GPU, for tensor-parallel size n (all GiB = 2**30 bytes):
  requested       = usable memory x gpu_memory_utilization
  weights         = checkpoint bytes / n  (- cpu_offload_gb)
  non-torch       = NON_TORCH_GIB (1 GPU, 0.6.4.x; V0 from 0.6.5: NON_TORCH_V0_BASELINE_GIB; V1:
                    NON_TORCH_V1_ONE_GPU_GIB) or NON_TORCH_MULTI_GPU_GIB of
                    the GPU generation (TP x PP > 1)                                                       (estimate)
  activation peak = max(forward pass of max_num_batched_tokens tokens, sampler warm-up)
      forward     = max_num_batched_tokens x dtype bytes x (3.0 x hidden + 3 x MLP width / TP [+ 2.0 x hidden at TP > 1])
                                                                                   (estimate, fitted; see below)
      sampler     = max_num_seqs x vocab_size x SAMPLER_BYTES of the engine (V1 fitted)              (estimate)
  CUDA graphs     = CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_PER_SIZE_GIB x largest capture size, only when the
                    engine counts graphs in the budget (V1 from 0.21.0) and --enforce-eager is off   (estimate)
  other processes = memory other processes already hold on the GPU: given (--reserved-gib), never predicted; 0 by
                    default. In the KV budget only where vLLM counts it (0.6.4.x); elsewhere the budget must fit in
                    usable - reserved (V1 refuses to start otherwise; V0 runs out of memory)
  KV cache        = requested - weights - non-torch - other processes - activation peak - CUDA graphs
  KV tokens       = floor(KV cache / (16 x KV bytes per token per GPU)) x 16      (blocks of 16 tokens)
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs
from gpufleet.errors import UserError
from gpufleet.images.pylock import lock_pins
from gpufleet.stacks.project import checked_recipe_files, recipe_images, shown

GIB = 2**30
DATA = Path(__file__).parent / "data" / "vllm_engines.yaml"
BLOCK_SIZE = 16  # vLLM's default KV block size on CUDA (tokens per block); KV tokens are whole blocks
# V0 pads each MLA cache entry to 256 bytes on CUDA (vllm/worker/cache_engine.py CacheEngine._align_cache: MLA models,
# VLLM_CUDA_MEM_ALIGN_KV_CACHE on by default; its PR: "for MLA with a head dim of 576 ... we allocate 640 elements per
# cache entry instead of 576"): DeepSeek-V2-Lite's 27 x 576 x 2 B = 31,104 B per token become 27 x 1280 = 34,560, as
# vllm#15196 logs (0.7.2: 14.96 GiB for 464,880 tokens = 34,553 B). V1 does not pad (i15871, 0.8.3 V1: 31,130 B).
# From 0.7.2, the earliest version a log shows it in.
MLA_V0_ALIGN_BYTES, MLA_V0_ALIGN_FROM = 256, (0, 7, 2)

# Forward-pass activation peak per batched token, in vectors of the model's dtype, from which tensors are alive in
# the decoder layer's MLP as vLLM's model files run it eagerly (V0's profile run; read in the 0.6.3, 0.6.4, 0.7.1,
# 0.8.5, 0.9.2 and 0.10.0 wheels, models/qwen2.py, llama.py, gemma*.py, ...). Before the MLP three hidden-size tensors
# are alive: the residual stream, the MLP's input (the post-attention norm's output, which the decoder layer's
# `hidden_states` holds while `self.mlp(hidden_states)` runs) and the previous layer's output (the model's loop variable,
# normed in place as this layer's attention input). In a gated MLP the gate/up projection gives 2 x the MLP width (a
# plain one 1 x), the activation 1 x, the down projection 1 x hidden. The peak is the largest of:
#   at the activation        LIVE_HIDDEN x H + up + M
#   at the down projection   (LIVE_HIDDEN + 1) x H + M (+ up, where the MLP keeps its gate/up output referenced)
#                            (+ M: Marlin's copy of the input, below)
#   at its all-reduce, TP>1  (LIVE_HIDDEN + 2) x H + M (+ up where kept): the rank's partial output and the reduced copy
# with H the hidden size and M the MLP width on one GPU (MoE layers: moe_point, below). Most
# model files keep `gate_up` (`gate_up, _ = self.gate_up_proj(x); x = self.act_fn(gate_up); x, _ = self.down_proj(x)`);
# llama.py rebinds `x` from 0.6.4 and so frees it after the activation (vllm_engines.yaml mlp_frees_gate_up). So a
# Llama at TP 1 peaks at the activation (3 H + 3 M) and a Qwen2 at the down projection (4 H + 3 M). The logs agree
# within 1 % where the forward sets the peak (tests/sizing/test_calibration.py): vllm#10517 (Llama-3.1-8B, 0.6.4,
# 20000 and 29000 tokens: 2.07 / 2.99 GiB), zhihu-v100-qwen25-7b-v0 (0.8.5, 32768: 4.35), vllm#12663 and vllm#15815
# (Qwen2.5-32B at TP 2, 0.7.1: 1.54 / 1.26, at the all-reduce) and vllm#11230 (Qwen2.5-72B GPTQ as gptq_marlin, 8192:
# 2.34 against 2.31, the Marlin copy included). Before (issue 30's sixth round to the ninth) the hidden and TP terms
# were fitted on vllm#10517 and vllm#12663 (3.0 and 2.0 hidden vectors), which put every Qwen2-like model at TP 1 one
# hidden vector low (zhihu 4.13 against 4.35, vllm#11230 2.19 against 2.34).
LIVE_HIDDEN = 3
# Marlin's input copy: the dense Marlin GEMM op (gptq_marlin_gemm, which gptq_marlin and awq_marlin linear layers call)
# allocated on every call, next to its output, a scratch tensor of the input's size (size_m x size_k, in the activation
# dtype) that only act-order checkpoints need (to permute the input's columns), whether or not the checkpoint has act
# order (csrc/quantization/gptq_marlin/gptq_marlin.cu, gptq_marlin_gemm: `a_tmp`; read in the stored copy with the
# ScalarTypeTorchPtr signature, 0.6.x; find_string id 44978174). It goes through PyTorch's allocator, so the profile's
# torch peak counts it. The largest is the MLP's down projection, whose input is the activated product (MLP width / TP
# per token), at the down projection (forward_peak). After the kernel refactor of PR #16850 (opened 2025-04-18, after
# 0.8.4) the op allocates it only
# when the checkpoint has act order (the stored copies whose signature takes optional g_idx / perm tensors), so it is
# counted before 0.8.5 (0.8.5 itself not read; the 0.6.4.post1 tag is not in the index either). gptq_marlin runs
# through Marlin below compute capability 9.0 only: vLLM's mixed-precision kernel list puts Machete (Hopper) first
# (quantization/kernels/mixed_precision/__init__.py _POSSIBLE_KERNELS); awq_marlin calls the Marlin op directly (awq_marlin.py
# AWQMarlinLinearMethod.apply -> apply_awq_marlin_linear). MoE models are left out: their routed experts run through
# the fused MoE Marlin path, not this op. The op's fp32 reduce buffer is not counted (SMs x min(rows rounded to 16,
# 64) x 256 x 4 B, about 5 MiB on an A40; stored copies of gptq_marlin.cu, find_string id 91959715). Log: vllm#11230
# (Qwen2.5-72B GPTQ-Int4 as gptq_marlin, 0.6.4.post1, A40, 8192 tokens, the checkpoint's MLP padded to 29696) logs
# 2.34 GiB of activation: 4 hidden + 4 MLP vectors (Qwen2's MLP keeps its gate/up output) give 2.31.
MARLIN_INPUT_COPY_BEFORE = (0, 8, 5)
MARLIN_INPUT_COPY_FORMATS: dict[str, tuple[int, int] | None] = {"gptq_marlin": (9, 0), "awq_marlin": None}
# Non-torch memory per GPU (CUDA context, cuBLAS and NCCL workspaces): the median of the single-GPU figures the
# logs print (0.03 vllm#13882, 0.16 PR #12126, 0.35 vllm#10517, 0.44 vllm#10360 (A6000, 0.6.4.post1), 1.79 PR #10511)
# and of the per-GPU figures at tensor parallel > 1 (0.25 vllm#13061, 0.34 / 0.38 / 0.43 vllm#16570, 3.58 PR #10511).
# Not vllm#11230's 4.09 GiB: vLLM 0.6.4.post1 counts as non-torch everything used on the device that is not one of
# its own live tensors, other processes' memory included (its worker.py:206-213), and that log already shows the
# 4.09 GiB in use before the profile run; it is memory the model cannot know (calibration.yaml, other_memory_gib).
# Since the terms below took the other accountings over, it serves one GPU under 0.6.4.x only (whole-device accounting,
# 0.35 on a 3090 in vllm#10517).
NON_TORCH_GIB = 0.35
# V0 from 0.6.5 on one GPU: those versions measure non-torch memory as the increase over a baseline taken at start-up,
# after the CUDA context exists (0.10.0 vllm/worker/worker.py:189,254-264; PR #10511), where 0.6.4.x took the whole
# device's use minus its own tensors (0.6.4.post1 worker.py:206-213), CUDA context included. The logs say the figure
# follows that accounting, not the GPU model: 0.35 on a 3090 under 0.6.4 (vllm#10517), and under 0.6.5+ 0.03 on an
# RTX 4060 (vllm#13882, 0.7.3), 0.16 on an H100 (PR #12126, 0.6.6.dev), 0.05 on T4s (0.7.2, 0.8.2) and on an A10-class
# card (the OCI AI Quick Actions log, 0.7.1), 0.09 on a V100-32G (0.8.5). Fitted (the median) on the single-GPU V0 >= 0.6.5 logs outside the small-GPU class, which
# are its fit rows (calibration.fit_non_torch_v0_baseline, re-derived by tests/sizing/test_calibration.py): PR #10511
# 1.79 (0.6.5.dev, H100), PR #12126 0.16, vllm#13882 0.03, vllm#15196 0.16 (L40S, 0.7.2) -> 0.16. The small-GPU
# logs (0.05 each) stay held out: they test it.
NON_TORCH_V0_BASELINE_GIB = 0.16
# V1 on one GPU: V1 also measures from a start-up snapshot taken after the CUDA context exists (0.19.0 logs "worker
# init memory snapshot ... cuda_memory=0.51GiB" before the profile, then "non-torch forward increase memory: X"), so
# its figure is the increase, not 0.6.4.x's whole-device figure. Fitted (the median) on the single-GPU V1 logs that
# print it outside the small-GPU class, which are its fit rows (calibration.fit_non_torch_v1_one_gpu, re-derived by
# tests/sizing/test_calibration.py): the fourteen llmd 0.19.0 H100 logs, 0.24-0.26 -> 0.25. The Kaggle T4 logs (V1 0.18,
# small GPUs) stay held out: they test it. Before issue 30's third round V1 took NON_TORCH_GIB (0.35).
NON_TORCH_V1_ONE_GPU_GIB = 0.25
# At tensor / pipeline parallel > 1 the per-GPU figure follows the GPU generation, not the engine: every H100 log
# with more than one GPU prints 2.07-3.58 GiB (V0 0.6.5.dev and V1 0.19.0 alike), every other one 0.20-0.34 (RTX
# 3090 / 4090, L40S, a 48 GB-class card, A100 PCIe; V0 and V1). So the constant is keyed by compute capability (9.0
# and newer, or older), fitted (the median of each) on every multi-GPU log that prints non-torch memory, which are
# therefore its fit rows (calibration.fit_non_torch_multi_gpu, re-derived by tests/sizing/test_calibration.py):
# 9.0+ pr10511 3.58 (0.6.5.dev), llmd gpt-oss-20b TP 2 2.07 (at 0.90 and at 0.95), Llama-4-Scout TP 4 2.17,
# Llama-3.3-70B FP8 TP 2 2.1 and TP 4 2.21 (0.19.0) -> 2.135; older pr14447 0.20 (TP 16), deploy-qwen 0.20 (4x RTX
# 2080 Ti 22G, V0 0.8.5, the driver), i13061 0.25, i12663 0.29, i15815 0.30, i16570 0.34 (V1 0.8.3, 4x A100-40G PCIe), the p4d DeepSeek-Coder-V2-Lite log
# 2.10 (8x A100-SXM4-40GB, TP 8, V0 0.7.1) -> 0.29. Why H100s take ~2 GiB more is not in the logs (likely NCCL's NVLink
# SHARP / NVSwitch buffers: the one NVSwitch A100 log, the p4d's 2.10 GiB at TP 8, is like the H100s', which would
# make an H100 PCIe pair an overestimate); the key stays the compute capability, so that p4d log is over-predicted
# (its KV +6.8 %) and NVSwitch A100s are sized with the older figure. Before issue 30 the key was the engine (V0 0.29,
# V1 2.07), which put the Kaggle T4 pairs (V1, held out) 20-30 % low.
NON_TORCH_MULTI_GPU_GIB = {"cc9+": 2.135, "older": 0.29}
# Sampler warm-up: the profile run samples max_num_seqs rows of vocabulary logits after the dummy forward pass
# (V1: 0.33.0 vllm/v1/worker/gpu_model_runner.py:5866-5882; V0: the profile's dummy sequences sample with top-k /
# top-p on): fp32 logits, probabilities, log-probabilities and the sort (values and int64 indices). Bytes per
# (sequence x vocabulary entry), per engine, fitted (the median) on the logs whose logged activation peak is more
# than 1.25x the forward-pass estimate, which are therefore its fit rows (calibration.fit_sampler_bytes, re-derived
# by tests/sizing/test_calibration.py): V1 llmd Llama-3.1-8B 15.5 (and 15.5 with --quantization fp8, 18.1 with
# --dtype float32), Qwen1.5-MoE 17.0, gpt-oss-20b 15.0, Qwen2.5-7B W8A8 / FP8 15.2 / 15.2, gemma-7b 14.9,
# Llama-3.3-70B FP8 at TP 2 / 4 16.0 / 16.1, gemma-2-2b / 9b / 27b 14.8 / 15.0 / 15.0 (0.19.0, 1024 sequences) -> 15.2; V0 PR #10511 41.2 (TP 1 and TP 2), vllm#13882 39.2, the two Tesla T4 logs 38.7 / 39.2 -> 39.2.
# V0 samples on the driver worker only, and vLLM sizes the group's KV cache by the worker with the fewest blocks,
# which is the driver: vllm#13061's two workers differ by 1.23 GiB, its 256 x 152064 x 39.2 B = 1.42 GiB sampler
# less its non-driver worker's 0.19 GiB peak.
SAMPLER_BYTES = {"v0": 39.2, "v1": 15.2}
# CUDA graph memory estimate: 0.09-0.17 GiB logged with largest capture size 16-32 (noonghunna/club-3090 #44,
# #104, #434) and 0.52 GiB at 512 (LMCache#3430, a held-out calibration row: its error is not independent of this
# term). The largest capture size (largest_capture_size) follows the engine and release, as read from the wheels:
# V1 from 0.10.0 min(2 x max_num_seqs, 512) (0.10.0 SchedulerConfig.__post_init__ cuda_graph_sizes default; 0.33.0
# vllm/config/vllm.py:2463-2470); V1 before it 512 whatever max_num_seqs (0.8.5 VllmConfig._set_cudagraph_sizes
# range(8, 513, 8); 0.9.2 cuda_graph_sizes default [512]); both then drop sizes above max_num_batched_tokens. V0
# captures up to the smallest of 1, 2, 4, 8, 16, ... 8192 that is at least max_num_seqs (0.8.5 and 0.10.0 the same).
CUDA_GRAPH_BASE_GIB = 0.12
CUDA_GRAPH_PER_SIZE_GIB = 0.0008
# gpt-oss raises the largest capture size from 512 to 1024 unless the user sets the capture sizes
# (vllm/model_executor/models/config.py, GptOssForCausalLMConfig.verify_and_update_config; logged by 0.19.0 as
# "[model_executor/models/config.py:131] Overriding max cuda graph capture size to 1024 for performance.").
CAPTURE_SIZE_OVERRIDE = {"gpt_oss": 1024}
# Sampler warm-up after the KV cache (V1): gpu_worker.compile_or_warm_up_model captures the CUDA graphs and then runs
# `_dummy_sampler_run` for min(max_num_seqs, max_num_batched_tokens) dummy requests, after the KV cache has taken
# the budget's activation share (0.19.0 gpu_worker.py:686 -> gpu_model_runner.py:5596-5601, which raises "CUDA out of
# memory occurred when warming up sampler with N dummy requests", in the llmd gpt-oss-20b traceback; the same order in
# 0.8.x gpu_worker.py compile_or_warm_up_model, "called after `capture_model` on purpose"). What it allocates must fit
# outside the budget: usable x (1 - gpu_memory_utilization), less the CUDA context that vLLM's start-up snapshot
# leaves outside it and the graphs captured outside it (V1 before 0.21). CUDA context outside the budget per GPU
# (estimate; total - initial free of the llmd 0.19.0 H100 logs): one GPU 0.51 (every single-GPU log: "worker init
# memory snapshot ... cuda_memory=0.51GiB"), more GPUs (NCCL too) 1.53 / 1.55 (Llama-3.3-70B FP8 TP 2 / 4), 2.01
# (gpt-oss-20b TP 2), 2.07 (Llama-4-Scout TP 4) -> median 1.78. As with non-torch memory (NON_TORCH_MULTI_GPU_GIB),
# the multi-GPU figure is an H100 one (compute capability 9.0 and newer); below 9.0 more GPUs take the single-GPU
# figure (estimate: the Kaggle T4 pairs, V1 0.18, started with 1.47 GiB outside the budget, so theirs is smaller).
WARMUP_CONTEXT_GIB = {"one": 0.51, "cc9+": 1.78, "older": 0.51}
# Several GPUs below 9.0 take the one-GPU figure for want of a measured one; the only measured multi-GPU contexts are
# the H100s' (1.53-2.07). Two GPUs below 9.0 started with less (the Kaggle T4 pairs, V1 0.18: 1.46 GiB outside the
# budget held the context and a 0.14 GiB warm-up); more than two did not: on V1 without --enforce-eager, vllm#17469
# (four A10s, 0.8.5), the Qwen3 A10 x 4 log (0.8.x) and vllm#16570 (four A100-40G, 0.8.3) ran out of memory, the L4 x 4
# run with --enforce-eager (vllm PR #20665) started. vllm#17469 ran out in the graphs' warm-up runs (its traceback's
# vllm/compilation/backends.py line 653, PiecewiseBackend.__call__'s cudagraph warm-up branch in the 0.8.5 wheel), after
# the KV cache was allocated, with 1.16 GiB left by the one-GPU figure. vllm PR #45517 (2026-06-13, not merged) says
# why it can be far more: the start-up snapshot is taken after NCCL's initialisation, so its workspace sits outside the
# budget, "~1-2 GiB on rank 0" and 8.76 GiB on the last pipeline stage of TP 2 x PP 2 on four 24 GB consumer GPUs
# (23.56 GiB total, 14.8 free at start-up). So with more than two GPUs below 9.0 a warm-up that fits only under the
# one-GPU figure is "tight" (fit._warmup_text).
# The warm-up can need more than the sampler's profiled peak: when gpt-oss-20b ran out of memory (llmd TP 1 log)
# PyTorch held 1.78 GiB reserved but unallocated and could not place a 0.77 GiB probability tensor, and the graphs
# took 1.84 GiB against vLLM's 1.30 estimate; the same run at TP 2 (llmd, 0.95) failed the same way with 1.62 GiB
# reserved but unallocated (modelled margin 1.24 GiB for a 2.97 GiB warm-up), while TP 2 at 0.90 started (margin 5.2).
# So a margin smaller than the sampler warm-up itself is "tight".


@cache
def _data() -> dict:
    return inputs.load_mapping(DATA, "sizing/data/vllm_engines.yaml")


def offload_ignored(version: str, architectures: tuple[str, ...], is_moe: bool, quantized: bool) -> str | None:
    """Why this version ignores --cpu-offload-gb for this model, or None (vllm_engines.yaml cpu_offload_ignored): the
    model runs on Model Runner V2 by default and that runner installs no weight offloader."""
    data = _data()["cpu_offload_ignored"]
    r = newest_read(data["releases"], version)
    if r is None:
        return None
    listed = any(a in r.get("architectures", ()) for a in architectures)
    if r.get("dense_unquantized_only") and (is_moe or quantized):
        listed = False
    if not (listed or (r.get("every_dense") and not is_moe)):
        return None
    return (
        f"ignored by vLLM {version}: the model runs on Model Runner V2 by default there (as read in the {r['from']} "
        "release), which installs no "
        f"weight offloader before {data['fixed_in']} ({data['issue']}), so every weight stays on the GPU; run vLLM "
        f"{data['fixed_in']} or later, or set VLLM_USE_V2_MODEL_RUNNER=0"
    )


def newest_read(rules: list[dict], version: str) -> dict | None:
    """Of per-release rules read in the wheels ({from: ...} in release order), the one of the newest release read at
    or before `version` (a release not read takes the rule of the one before it)."""
    v = parse_version(version)
    read = [r for r in rules if parse_version(r["from"]) <= v]
    return read[-1] if read else None


def hybrid_kv_cache() -> dict:
    """The versions of V1's hybrid KV cache manager (sizing/hybrid.py)."""
    return _data()["hybrid_kv_cache"]


def parse_version(v: str) -> tuple[int, ...]:
    """(0, 6, 4) for '0.6.4.post1' or '0.6.4rc1'; (0, 7) for '0.7.x' or 'V0, 0.7.x (2025-03)': the numeric release
    prefix of the first version in the text."""
    found = re.search(r"\d+\.\d+[\w.+-]*", v)
    v = found.group() if found else v
    out = []
    for part in v.split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(out)


def _recipe_files() -> tuple[Path, ...]:
    """The image recipes' files, as the recipes folder they were found in names them: the project's images/recipes/ and
    the package's, a project's shadowing a shipped one of the same name (stacks/project.py checked_recipe_files, the
    lookup of every recipe name). Listed on each call; what is read from them is cached per set of files."""
    return tuple(checked_recipe_files().values())


@cache
def _read(files: tuple[Path, ...]) -> list[tuple[Path, dict]]:
    """The recipes of `files` as (file, mapping) (the one place versions are pinned). Only a few keys are read, through
    the strict reader, not the whole recipe model: `plan fit` should not pay for building it (the recipes are validated
    in full wherever a stack or a build uses them)."""
    return [(path, inputs.load_mapping(path, shown(path))) for path in files]


def pins() -> dict[str, list[str]]:
    """vLLM version -> GPU kinds, from the image recipes."""
    return _pins(_recipe_files())


@cache
def _pins(files: tuple[Path, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for _, doc in _read(files):
        if v := (doc.get("pins") or {}).get("vllm"):
            out.setdefault(str(v), []).extend(doc.get("gpus") or [])
    return out


def transformers_pin(version: str) -> str | None:
    """The transformers release the image recipes pinning vLLM `version` install (their python_lock, a file of the
    images/ folder of the recipes folder each was found in: project.recipe_images), or None: no recipe pins that vLLM,
    those that do install different releases, or a project's recipe has no lock yet."""
    return _transformers_pin(version, _recipe_files())


@cache
def _transformers_pin(version: str, files: tuple[Path, ...]) -> str | None:
    found = set()
    for path, doc in _read(files):
        if str((doc.get("pins") or {}).get("vllm")) == version and doc.get("python_lock"):
            lock_file = recipe_images(path.parent) / str(doc["python_lock"])
            try:
                lock = inputs.read_text(lock_file, shown(lock_file))
            except UserError:  # a project's recipe without its lock yet: the image commands name that, not the sizing
                continue
            found |= {v for name, v in lock_pins(lock).items() if name == "transformers"}
    return found.pop() if len(found) == 1 else None


def newest_pinned() -> str:
    return max(pins(), key=parse_version)


def capability(text: str) -> tuple[int, int]:
    """A compute capability written M.m, as a comparable pair."""
    major, minor = text.split(".")
    return int(major), int(minor)


def version_for(gpu_name: str, given: str | None, cc: tuple[int, int] | None = None) -> str:
    """The version to follow: the one given, else the pin of the recipe serving that GPU kind, else the newest pin
    whose wheel runs on compute capability `cc` (the newest pin when none does or cc is not given)."""
    if given:
        return given
    if served := next((v for v, kinds in pins().items() if gpu_name in kinds), None):
        return served
    runs = [v for v in pins() if cc is None or wheel_problem(v, cc) is None]
    return max(runs, key=parse_version) if runs else newest_pinned()


def wheel_problem(version: str, cc: tuple[int, int]) -> str | None:
    """Why vLLM `version`'s PyPI wheel does not run on compute capability `cc` (vllm_engines.yaml
    lowest_compute_capability), or None."""
    rule = newest_read(_data()["lowest_compute_capability"], version)
    if rule is None or cc >= capability(rule["cc"]):
        return None
    have = f"{cc[0]}.{cc[1]}"
    runs = [v for v in pins() if parse_version(v) < parse_version(rule["from"])]
    best = max(runs, key=parse_version) if runs else None
    pin = f"; the image recipe for {', '.join(pins()[best])} pins {best}" if best else ""
    return (
        f"CUDA error: no kernel image is available for execution on the device (vLLM {version}'s wheel and its torch "
        f"carry machine code from compute capability {rule['cc']}, this GPU has {have}: its first kernel fails at "
        f"start; use vLLM {rule['last_before']} or older{pin})"
    )


class Engine(Struct, frozen=True):
    """How a vLLM version profiles memory (sizing/data/vllm_engines.yaml)."""

    version: str
    name: str  # "v0" or "v1"
    cuda_graphs_in_budget: bool

    @property
    def kv_dtypes(self) -> dict[str, dict]:
        return _data()["kv_cache_dtypes"][self.name]["dtypes"]


def known_version(version: str) -> bool:
    """A version given exactly (major.minor.patch at the start), not a range or a guess like '0.8.x' or 'V1 (2026-08)'."""
    return bool(re.fullmatch(r"\d+\.\d+\.\d+([.+-]?[\w.+-]*)?", version.strip()))


def engine(version: str, cc: tuple[int, int], named: str | None = None) -> Engine:
    """The engine a version runs on this GPU; `named` ("v0" / "v1") where a log names it (VLLM_USE_V1 could pick
    either from 0.8 to 0.10)."""
    v = parse_version(version)
    v0 = v < (0, 8) or (v < (0, 11) and cc < (8, 0)) if named is None else named.lower() == "v0"
    graphs_from = parse_version(_data()["engines"]["v1"]["cuda_graphs_in_budget_from"])
    return Engine(version=version, name="v0" if v0 else "v1", cuda_graphs_in_budget=not v0 and v >= graphs_from)


def as_release(version: str) -> str:
    """A version as PyPI names vLLM's releases: vLLM's git tags spell them with a v (v0.10.0 is 0.10.0)."""
    return re.sub(r"^[vV](?=\d)", "", version.strip())


def version_problem(version: str) -> str | None:
    if not version.strip():
        return f"empty: give a vLLM release, e.g. {newest_pinned()}, or leave the option out for the recipe's pin"
    v = parse_version(version)
    if len(v) < 2:
        return f"{version!r} is not a vLLM version (e.g. {newest_pinned()})"
    if v < (0, 6):
        return f"the memory model follows the profiler of vLLM 0.6 and later; {version} is older"
    return None


def mla_entry_bytes(latent_bytes: int, eng: Engine | None) -> int:
    """Bytes of one MLA cache entry (one token, one layer) as the engine allocates it (MLA_V0_ALIGN_BYTES)."""
    if eng is None or eng.name != "v0" or parse_version(eng.version) < MLA_V0_ALIGN_FROM:
        return latent_bytes
    return -(-latent_bytes // MLA_V0_ALIGN_BYTES) * MLA_V0_ALIGN_BYTES


def mla_absorbs(eng: Engine | None) -> bool:
    """True where the version keeps MLA's absorbed decode matrices beside the weights (data/vllm_engines.yaml
    mla_absorbed_weights: V0 0.7.x)."""
    if eng is None:
        return False
    row = _data()["mla_absorbed_weights"]
    return parse_version(row["from"]) <= parse_version(eng.version) < parse_version(row["below"])


def lora_in_budget(eng: Engine | None) -> bool:
    """True where vLLM counts the preallocated LoRA slots in the weights it subtracts from the KV budget (V1; V0 from
    0.8.0). Earlier V0 builds the slots after measuring the weights and outside the profile run, so they are neither
    in the logged weights nor taken from the KV cache (data/vllm_engines.yaml lora_slots_in_budget)."""
    if eng is None or eng.name != "v0":
        return True
    return parse_version(eng.version) >= parse_version(_data()["lora_slots_in_budget"]["v0_from"])


def kv_dtype_problem(eng: Engine, kv_cache_dtype: str, cc: tuple[int, int], gpu_name: str) -> str | None:
    facts = _data()["kv_cache_dtypes"][eng.name]
    row = eng.kv_dtypes.get(kv_cache_dtype)
    if row is None:
        return (
            f"kv_cache_dtype {kv_cache_dtype!r} is not one vLLM {eng.version} ({eng.name.upper()} engine) offers on CUDA "
            f"that this tool sizes: one of {', '.join(eng.kv_dtypes)} ({facts['not_modelled']})"
        )
    need = capability(row["min_cc"])
    if cc < need:
        there = [d for d, r in eng.kv_dtypes.items() if d != "auto" and cc >= capability(r["min_cc"])]
        return (
            f"kv_cache_dtype {kv_cache_dtype} needs compute capability >= {row['min_cc']} in vLLM {eng.version}; "
            f"{gpu_name} has {cc[0]}.{cc[1]}; use --kv-cache-dtype auto (the dtype the model is served in)"
            + (f" or one of {', '.join(there)}" if there else "")
        )
    return None


def serve_defaults(version: str, eng: Engine, usable_gib: float, gpu_name: str, max_model_len: int) -> tuple[dict, str]:
    """(gpu_memory_utilization, max_num_seqs, max_num_batched_tokens) `vllm serve` applies, and where that is written.
    A version the table has not read (one no shipped recipe pins: given, or a project recipe's) takes the defaults of
    the nearest version read (said so)."""
    table = _data()["serve_defaults"]
    nearest = min(table, key=lambda p: abs(_as_number(parse_version(p)) - _as_number(parse_version(version))))
    if eng.name == "v0" and "v0" not in table[nearest]:
        nearest = next(p for p in table if "v0" in table[p])
    d = table[nearest]
    util = d["gpu_memory_utilization"]
    if eng.name == "v0":
        row = d["v0"]
        batched = max(max_model_len, 2048) if max_model_len <= 32768 else 2048
        values = {"gpu_memory_utilization": util["value"], "max_num_seqs": row["max_num_seqs"], "max_num_batched_tokens": batched}
        source = f"vLLM {nearest} {util['source']}; {row['source']}"
    else:
        large = usable_gib >= 70 and "A100" not in gpu_name.upper()
        row = d["large_gpu" if large else "small_gpu"]
        values = {
            "gpu_memory_utilization": util["value"],
            "max_num_seqs": row["max_num_seqs"],
            "max_num_batched_tokens": row["max_num_batched_tokens"],
        }
        source = f"vLLM {nearest} {util['source']}; {row['source']}"
    if nearest != version:
        source += f" (defaults of {nearest}, the nearest version read: {version}'s are not in {shown(DATA)})"
    return values, source


def _as_number(v: tuple[int, ...]) -> float:
    return sum(part / 1000**i for i, part in enumerate(v))


class Term(Struct, frozen=True):
    """One term of the per-GPU memory budget, with its source and whether it is an estimate."""

    name: str
    gib: float
    source: str
    estimate: bool

    def to_json(self) -> dict:
        return {"name": self.name, "gib": self.gib, "source": self.source, "estimate": self.estimate}  # full precision


def multi_gpu_key(cc: tuple[int, int]) -> str:
    """The NON_TORCH_MULTI_GPU_GIB row of a GPU generation."""
    return "cc9+" if cc >= (9, 0) else "older"


def non_torch_gib(gpus: int, eng: Engine, cc: tuple[int, int] = (8, 0)) -> Term:
    """Per GPU; `gpus` is the GPUs of one replica (TP x PP), `cc` their compute capability."""
    if gpus > 1:
        key = multi_gpu_key(cc)
        return Term(
            "non_torch",
            NON_TORCH_MULTI_GPU_GIB[key],
            f"median of the per-GPU figures logged with more than one GPU of compute capability {'9.0 and newer' if key == 'cc9+' else 'below 9.0'} "
            "(NCCL / all-reduce buffers; calibration.yaml)",
            True,
        )
    if eng.name == "v0" and not device_wide_non_torch(eng):
        return Term(
            "non_torch",
            NON_TORCH_V0_BASELINE_GIB,
            "V0 from 0.6.5 measures from a start-up baseline (the CUDA context is outside it): median of the "
            "single-GPU figures logged by those versions on H100 / RTX 4060 (calibration.yaml)",
            True,
        )
    if eng.name == "v1":
        return Term(
            "non_torch",
            NON_TORCH_V1_ONE_GPU_GIB,
            "V1 measures from a start-up snapshot (the CUDA context is outside it): median of the single-GPU figures "
            "logged by V1 0.19.0 on H100 (calibration.yaml)",
            True,
        )
    return Term("non_torch", NON_TORCH_GIB, "median of the single-GPU figures logged (calibration.yaml)", True)


def device_wide_non_torch(eng: Engine) -> bool:
    """True where the version takes non-torch memory as the whole device's use minus its own tensors (0.6.4.x:
    the CUDA context and other processes' memory are in it); the same window as other processes counted."""
    row = _data()["other_processes"]["counted_in_kv_budget"]
    return parse_version(row["from"]) <= parse_version(eng.version) < parse_version(row["below"])


def other_processes(gib: float, eng: Engine) -> tuple[Term, bool]:
    """Memory other processes (or a previous instance) hold on each GPU: an input, not a prediction.
    (term, counted): counted is True when this version takes it out of the KV budget (0.6.4.x); otherwise the
    budget assumes it is free and the caller checks that usable - reserved still covers the budget."""
    row = _data()["other_processes"]["counted_in_kv_budget"]
    v = parse_version(eng.version)
    counted = parse_version(row["from"]) <= v < parse_version(row["below"])
    if not gib:
        return Term("other_processes", 0.0, "none given (--reserved-gib): the GPU is assumed to serve vLLM alone", False), counted
    if counted:
        return Term(
            "other_processes", gib, f"given (--reserved-gib); vLLM {eng.version} counts it ({row['source']})", False
        ), True
    return (
        Term(
            "other_processes",
            0.0,
            f"given (--reserved-gib {gib}); vLLM {eng.version} measures from a start-up baseline and does not count it "
            "in the KV budget: the budget must fit in what is left",
            False,
        ),
        False,
    )


def reserved_problem(gib: float, usable_gib: float, requested_gib: float, eng: Engine) -> str | None:
    """When the budget does not fit beside the given memory of other processes (versions that do not count it)."""
    if usable_gib - gib >= requested_gib:
        return None
    facts = _data()["other_processes"]
    what = facts["v1_refuses"] if eng.name == "v1" else facts["v0_not_checked"]
    return (
        f"{gib} GiB held by other processes leaves {usable_gib - gib:.2f} GiB free per GPU, below the budget of "
        f"{requested_gib:.2f} GiB (usable x gpu_memory_utilization): vLLM {eng.version} ({eng.name.upper()}): {what}; "
        "lower gpu_memory_utilization or free the GPU"
    )


def mlp_vectors(model) -> int:
    """MLP-width vectors one token holds at the activation: gate/up output and activated product (3) for a gated MLP,
    up output and activation (2) for a plain one."""
    return 3 if model.gated_mlp else 2


def frees_gate_up(model_type: str, version: str) -> bool:
    """Whether this model file's MLP drops its gate/up output before the down projection (vllm_engines.yaml
    mlp_frees_gate_up)."""
    v = parse_version(version) if version else (0,)
    return any(model_type in rule["model_types"] and v >= parse_version(rule["from"]) for rule in _data()["mlp_frees_gate_up"])


def _marlin_copy(model, quantization: str | None, version: str, cc: tuple[int, int]) -> bool:
    """Whether the down projection runs the dense Marlin op that copies its input (MARLIN_INPUT_COPY_FORMATS)."""
    if quantization not in MARLIN_INPUT_COPY_FORMATS or model.is_moe:
        return False
    other_kernel_from = MARLIN_INPUT_COPY_FORMATS[quantization]
    if other_kernel_from is not None and cc >= other_kernel_from:
        return False
    return not version or parse_version(version) < MARLIN_INPUT_COPY_BEFORE


def forward_peak(
    model,
    tp: int = 1,
    version: str = "",
    quantization: str | None = None,
    cc: tuple[int, int] = (8, 0),
    expert_parallel: bool = False,
    tokens: int = 0,
    copies: dict[str, float] | None = None,
    dtype_bytes: int = 2,
) -> tuple[str, float, float]:
    """Where the forward pass's activation peaks (LIVE_HIDDEN above), as (where, elements alive there per batched token
    on one GPU, bytes of an offloaded layer's weights copied in for it): the largest of a dense MLP's activation, down
    projection and, at TP > 1, its all-reduce, and for MoE layers the fused experts' buffers (moe_point), whose share per
    token falls where `tokens` is above the kernels' chunk (fused_moe_chunk; `tokens` 0: no chunk). `copies` (bytes
    per kind of layer, "dense" and "moe"; fit.offloaded_layer_bytes) adds the weights a layer of that kind brings onto
    the GPU for its forward, so the points are compared in bytes (`dtype_bytes` an element)."""
    h = model.hidden_size
    points: list[tuple[str, float, str]] = []
    if not model.is_moe or len(model.moe_layer_ids) < model.layers:  # dense layers (DeepSeek's first ones too)
        m = model.intermediate_size / tp
        up = mlp_vectors(model) - 1
        kept = 0 if frees_gate_up(model.model_type, version) else up
        copy = _marlin_copy(model, quantization, version, cc)
        points += [
            ("the activation", LIVE_HIDDEN * h + (up + 1) * m, "dense"),
            ("the down projection" + (" with Marlin's copy of its input" if copy else ""),
             (LIVE_HIDDEN + 1) * h + (1 + kept + int(copy)) * m, "dense"),
        ]  # fmt: skip
        if tp > 1:
            points.append(("the down projection's all-reduce", (LIVE_HIDDEN + 2) * h + (1 + kept) * m, "dense"))
    if model.is_moe:
        where, every, caches = moe_point(model, tp, version, expert_parallel)
        chunk = fused_moe_chunk(version)
        if tokens and chunk and tokens > chunk:
            where += f", {chunk:,} tokens at a time (VLLM_FUSED_MOE_CHUNK_SIZE)"
            caches *= chunk / tokens
        points.append((where, every + caches, "moe"))
    copied = copies or {}
    where, elements, kind = max(points, key=lambda p: max(tokens, 1) * dtype_bytes * p[1] + copied.get(p[2], 0.0))
    return where, elements, copied.get(kind, 0.0)


def moe_point(model, tp: int, version: str, expert_parallel: bool) -> tuple[str, float, float]:
    """The fused MoE layer's peak per batched token, as (where, elements every token holds, elements of the fused
    kernels' buffers, which hold at most fused_moe_chunk(version) tokens): LIVE_HIDDEN and the shared experts' output
    (computed first, where the model has them: deepseek_v2.py, qwen2_moe.py), then the fused kernels' buffers for the
    token's experts_per_token slots (vllm/model_executor/layers/fused_moe/fused_moe.py fused_experts_impl): the gate/up
    output (k x 2N), the activated product (k x N) and the down projections' outputs before their sum (k x hidden), N
    the expert width on the rank (split over TP, whole under expert parallel). vLLM up to 0.7.3 allocates the three
    apart (intermediate_cache1/2/3); from 0.8.0 the first and third share one buffer of k x max(2N, hidden) (cache13;
    vllm_engines.yaml fused_moe_shared_cache_from, with the releases read)."""
    h, k = model.hidden_size, model.experts_per_token
    n = model.expert_intermediate if expert_parallel and tp > 1 else model.expert_intermediate / tp
    up = (mlp_vectors(model) - 1) * n
    shared = h if model.shared_intermediate else 0
    v = parse_version(version) if version else (0,)
    if v >= parse_version(_data()["fused_moe_shared_cache_from"]):
        caches = k * max(up, h) + k * n
    else:
        caches = k * up + k * n + k * h
    return ("the fused MoE experts' buffers", LIVE_HIDDEN * h + shared, caches)


def fused_moe_chunk(version: str) -> int | None:
    """The most tokens the fused MoE kernels run at once, so their buffers' token count (vllm_engines.yaml
    fused_moe_chunk_tokens: VLLM_FUSED_MOE_CHUNK_SIZE's default, by release read), or None where they take every
    batched token at once (from 0.18.0; and an unpinned version, the newest behaviour)."""
    rule = newest_read(_data()["fused_moe_chunk_tokens"], version) if version else None
    return rule["tokens"] if rule else None


def forward_activation(
    tokens: int,
    model,
    tp: int = 1,
    dtype_bytes: int = 2,
    version: str = "",
    quantization: str | None = None,
    cc: tuple[int, int] = (8, 0),
    expert_parallel: bool = False,
    copies: dict[str, float] | None = None,
) -> Term:
    """The forward pass's activation peak on one GPU of a TP group (forward_peak), `tokens` x the dtype's bytes (2 B;
    4 B under --dtype float32) per element, + the weights of the offloaded decoder layer running there, where the
    engine copies them onto the GPU (offload_copies; `copies` from fit.offloaded_layer_bytes)."""
    where, elements, copied = forward_peak(model, tp, version, quantization, cc, expert_parallel, tokens, copies, dtype_bytes)
    note = (
        f" + {copied / GIB:.2f} GiB: that offloaded decoder layer's weights, copied onto the GPU for its forward "
        "(V0 maybe_offload_to_cpu; vllm_engines.yaml cpu_offload_copies)"
        if copied
        else ""
    )
    return Term(
        "activation_forward",
        (tokens * dtype_bytes * elements + copied) / GIB,
        f"{tokens} batched tokens x {dtype_bytes} B x {elements:,.0f} elements a token alive at {where} "
        f"(hidden {model.hidden_size}, MLP width {model.mlp_width}, TP {tp}; profiler.LIVE_HIDDEN){note}",
        True,
    )


def offload_copies(eng: Engine) -> bool:
    """Whether this engine copies an offloaded layer's weights onto the GPU for the layer's forward (V0), rather than
    reading them in place from pinned host memory (V1's UVA); vllm_engines.yaml cpu_offload_copies."""
    return eng.name in _data()["cpu_offload_copies"]["engines"]


def sampler_warmup(max_num_seqs: int, vocab_size: int, engine_name: str = "v1") -> Term:
    per = SAMPLER_BYTES[engine_name]
    gib = max_num_seqs * vocab_size * per / GIB
    return Term(
        "sampler_warmup", gib, f"{max_num_seqs} seqs x vocab {vocab_size} x {per} B ({SAMPLER_SOURCE[engine_name]})", True
    )


# where the sampler pass runs, per engine (SAMPLER_BYTES: the bytes fitted on each engine's logs)
SAMPLER_SOURCE = {
    "v0": "V0: the sampler pass of the profile run, on the driver worker; bytes fitted on V0 logs, vllm PR #10511, vllm#13882",
    "v1": "V1; 0.33.0 gpu_model_runner.py:5866-5882",
}


def largest_capture_size(eng: Engine, max_num_seqs: int, max_num_batched_tokens: int, model_type: str = "") -> int:
    """The largest CUDA graph capture size of the engine and release (see CUDA_GRAPH_BASE_GIB), or the model's
    override (CAPTURE_SIZE_OVERRIDE)."""
    if eng.name == "v0":  # the smallest of 1, 2, 4, 8, 16, ..., 8192 at least max_num_seqs
        return next((n for n in (1, 2, 4) if n >= max_num_seqs), min(-(-max_num_seqs // 8) * 8, 8192))
    if model_type in CAPTURE_SIZE_OVERRIDE:
        return CAPTURE_SIZE_OVERRIDE[model_type]
    cap = min(2 * max_num_seqs, 512) if parse_version(eng.version) >= (0, 10) else 512
    return min(cap, max_num_batched_tokens)


def cuda_graphs(eng: Engine, enforce_eager: bool, max_num_seqs: int, max_num_batched_tokens: int, model_type: str = "") -> Term:
    if enforce_eager:
        return Term("cuda_graphs", 0.0, "--enforce-eager: no CUDA graphs are captured", False)
    if not eng.cuda_graphs_in_budget:
        return Term(
            "cuda_graphs",
            0.0,
            f"vLLM {eng.version} ({eng.name.upper()}) captures graphs after sizing the KV cache, outside the budget",
            False,
        )
    largest = largest_capture_size(eng, max_num_seqs, max_num_batched_tokens, model_type)
    return Term(
        "cuda_graphs",
        CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_PER_SIZE_GIB * largest,
        f"{CUDA_GRAPH_BASE_GIB} + {CUDA_GRAPH_PER_SIZE_GIB} x largest capture size {largest} (logged estimates; "
        "subtracted by 0.33.0 gpu_worker.py:753-757)",
        True,
    )


def graphs_outside_budget_gib(eng: Engine, max_num_seqs: int, max_num_batched_tokens: int, model_type: str = "") -> float:
    """The graph pool when it is captured outside the budget (V0, V1 before 0.21): the same estimate."""
    largest = largest_capture_size(eng, max_num_seqs, max_num_batched_tokens, model_type)
    return CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_PER_SIZE_GIB * largest


class Warmup(Struct, frozen=True):
    """The sampler warm-up after the KV cache (V1), per GPU of the last pipeline stage (all GiB)."""

    outside_gib: float  # usable x (1 - gpu_memory_utilization) - other processes' memory the budget does not count
    context_gib: float  # CUDA context outside the budget (WARMUP_CONTEXT_GIB)
    graphs_gib: float  # graphs captured outside the budget (0 where the budget counts them, or --enforce-eager)
    sampler_gib: float  # the warm-up itself: the margin it needs to be sure (see WARMUP_CONTEXT_GIB)
    context_measured_gib: float = 0.0  # where context_gib is not measured for these GPUs: the measured multi-GPU figure

    @property
    def margin_measured_gib(self) -> float:
        """The margin with the measured multi-GPU context (margin_gib where the context is measured)."""
        return self.outside_gib - max(self.context_gib, self.context_measured_gib) - self.graphs_gib

    @property
    def margin_gib(self) -> float:
        """What is left outside the budget for the warm-up beyond its profiled peak (which the budget's activation
        share, max(forward, sampler), already leaves free once the profile's tensors are released)."""
        return self.outside_gib - self.context_gib - self.graphs_gib


def sampler_warmup_after_kv(
    eng: Engine,
    usable_gib: float,
    util: float,
    unbudgeted_gib: float,
    gpus: int,
    graphs_outside_gib: float,
    sampler_gib: float,
    cc: tuple[int, int] = (8, 0),
) -> Warmup | None:
    """The warm-up's headroom on V1 (None on V0, whose profile run is its only sampler pass before the KV cache)."""
    if eng.name != "v1":
        return None
    key = "one" if gpus == 1 else multi_gpu_key(cc)
    return Warmup(
        outside_gib=usable_gib * (1 - util) - unbudgeted_gib,
        context_gib=WARMUP_CONTEXT_GIB[key],
        graphs_gib=graphs_outside_gib,
        sampler_gib=sampler_gib,
        context_measured_gib=WARMUP_CONTEXT_GIB["cc9+"] if key == "older" and gpus > 2 else 0.0,
    )


def known_kv_dtypes() -> list[str]:
    """Every KV cache dtype some engine here sizes (the GPU and version decide which are accepted)."""
    return list(dict.fromkeys(d for table in _data()["kv_cache_dtypes"].values() for d in table["dtypes"]))
