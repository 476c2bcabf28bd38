"""The memory model against published vLLM startup logs (data/calibration.yaml): predictions, errors by class, fits.

Three checks, each on the logs that carry what it needs:
- KV: a log with its GPU's total memory, a vLLM version from 0.6 on, an architecture in the sizing catalog and a
  logged KV figure is compared on KV tokens (or its GPU blocks x 16), else on KV cache GiB; within 10 % or 0.2 GiB.
- weights: a log with "Loading model weights took X GB" and a catalogued architecture: per-GPU weights within 2 %.
- verdict: every log whose architecture is catalogued: where vLLM ran out of memory or refused, `plan fit` must not
  say "fits" (and must give vLLM's reason); where it started, it must not say "does not fit". Logs without the total
  memory are checked on the refusals that do not depend on memory (heads, experts, layers, dtype).
Each log is sized with its own total_gpu_memory, vLLM version (or the engine it names) and flags. A log whose GPU
held memory of something other than the vLLM worker gives it as other_memory_gib, passed as `--reserved-gib` is.
"""

from __future__ import annotations

import re
import statistics
from functools import cache
from pathlib import Path

import msgspec
from msgspec import Struct

from gpufleet import inputs
from gpufleet.sizing import fit, hybrid, models, parallel, profiler
from gpufleet.sizing.profiler import GIB

DATA = Path(__file__).parent / "data" / "calibration.yaml"
TOLERANCE = 0.10
TOLERANCE_GIB = 0.2
WEIGHT_TOLERANCE = 0.02
MEDIAN_BOUND = 0.03  # signed median error per class (issue 30: errors not systematically optimistic)
CLASSES = ("dense", "moe", "tp", "v0", "quantized", "small_gpu")
GENERIC_CC = "8.0"  # for a structural check of a log that does not name its GPU (no memory term is used)


@cache
def table() -> dict:
    return inputs.load_mapping(DATA, "sizing/data/calibration.yaml")


def arch_of(row: dict) -> models.ModelArch | None:
    """The log's architecture in the sizing catalog (catalog_arch_of), with the served checkpoint's quantization block
    where the row states it (checkpoint_quantization_config: a quantized checkpoint of a model whose config.json copy
    is the unquantized one)."""
    arch = catalog_arch_of(row)
    served = row.get("quantization")
    if arch is not None and arch.checkpoint_method is not None and served in fit.formats():
        # the config.json copy is the architecture's (e.g. DeepSeek-V3's own FP8 one); the log served the checkpoint
        # its `quantization` names (e.g. an AWQ one), whose quantization_config names that method
        arch = msgspec.structs.replace(arch, checkpoint_method=fit.checkpoint_method_of(served))
    qc = row.get("checkpoint_quantization_config")
    if arch is None or not qc:
        return arch
    return msgspec.structs.replace(arch, weight_block_size=models.weight_block_size({"quantization_config": qc}))


def catalog_arch_of(row: dict) -> models.ModelArch | None:
    """The log's architecture in the sizing catalog: its config.json copy, its models.yaml row, or its model name."""
    cat = models.catalog()
    if row.get("config"):
        src = models._sources().get(f"{row['config']}.json") or {}
        name = src.get("model") or str(row["config"]).replace("--", "/", 1)
        if name in cat:
            return cat[name]
    if row.get("arch") and row["arch"] in cat:
        return cat[row["arch"]]
    missing = str(row.get("config_missing") or "").replace("--", "/", 1)
    if missing in cat:  # no config.json copy was found; the catalog has a row for the model
        return cat[missing]
    name = str(row.get("model") or "").split(" ")[0]
    for suffix in ("", "-FP8", "-AWQ", "-GPTQ-Int4", "-GPTQ-Int8"):  # a quantized checkpoint of a catalogued model
        if name.endswith(suffix) and name[: len(name) - len(suffix)] in cat:
            return cat[name[: len(name) - len(suffix)]]
    return None


def _version_ok(row: dict) -> bool:
    v = profiler.parse_version(str(row.get("vllm") or ""))
    return (len(v) >= 2 and v >= (0, 6)) or row.get("engine") in ("V0", "V1") and not v


def _not_tested(row: dict) -> bool:
    """The table's reason not to test a log, unless the reason was only that the catalog had no row for its model
    and the catalog has one now."""
    why = str(row.get("not_tested") or "")
    return bool(why) and not (why.startswith("no models.yaml row") and arch_of(row) is not None)


def testable(row: dict) -> bool:
    """A KV comparison: total memory, a version from 0.6 on (or a named engine), a catalogued architecture, a KV
    figure, and no reason given not to test it."""
    lg = row.get("logged") or {}
    return (
        not _not_tested(row)
        and row.get("total_gpu_memory_gib") is not None
        and arch_of(row) is not None
        and _version_ok(row)
        and any(k in lg for k in ("kv_tokens", "gpu_blocks", "kv_cache_gib"))
    )


def rows() -> list[dict]:
    return [r for r in table()["logs"] if testable(r)]


def classes(row: dict) -> list[str]:
    """The classes a log counts in: its tags (moe, tp, v0, quantized, small_gpu, ...) and dense (not MoE)."""
    tags = set(row.get("tags") or [])
    arch = arch_of(row)
    if arch is not None and arch.is_moe:
        tags.add("moe")
    if ((row.get("flags") or {}).get("tensor_parallel_size") or 1) >= 2:
        tags.add("tp")
    if row.get("quantization"):
        tags.add("quantized")
    if row.get("engine") == "V0" or (row.get("engine") is None and profiler.parse_version(str(row.get("vllm"))) < (0, 8)):
        tags.add("v0")
    if "moe" not in tags:
        tags.add("dense")
    return [c for c in CLASSES if c in tags] + sorted(t for t in tags if t not in CLASSES)


def serving(row: dict) -> fit.Serving:
    f = row.get("flags") or {}
    v = str(row.get("vllm") or "")
    return fit.Serving(
        gpus=f.get("tensor_parallel_size") or 1,
        pipeline_parallel=f.get("pipeline_parallel_size") or 1,
        data_parallel=f.get("data_parallel_size") or 1,
        expert_parallel=bool(f.get("enable_expert_parallel", False)),
        dtype=row.get("dtype") or "auto",
        quantization=row.get("quantization") or f.get("quantization"),
        kv_cache_dtype=f.get("kv_cache_dtype") or "auto",
        max_model_len=f.get("max_model_len"),
        max_num_seqs=f.get("max_num_seqs"),
        max_num_batched_tokens=f.get("max_num_batched_tokens"),
        gpu_memory_utilization=f.get("gpu_memory_utilization"),
        enforce_eager=bool(f.get("enforce_eager", False)),
        cpu_offload_gb=float(f.get("cpu_offload_gb") or 0.0),
        vllm_version=v if profiler.parse_version(v) else None,
        reserved_gib=row.get("other_memory_gib") or 0.0,
        max_loras=f.get("max_loras") or (1 if f.get("enable_lora") else 0),  # vLLM's default 1 slot with --enable-lora
        max_lora_rank=f.get("max_lora_rank") or 16,
        engine=str(row["engine"]).lower() if row.get("engine") in ("V0", "V1") else None,
    )


def gpu_of(row: dict) -> fit.Gpu:
    total = row.get("total_gpu_memory_gib")
    return fit.Gpu(
        row["id"],
        row.get("compute_capability") or GENERIC_CC,
        total if total is not None else 80.0,
        row.get("total_source", "logged") if total is not None else "not logged (structural checks only)",
        total is None,
    )


def predict(row: dict) -> fit.Fit:
    arch = arch_of(row)
    assert arch is not None, f"{row['id']}: no catalogued architecture"
    return fit.measure(arch, gpu_of(row), serving(row))


class Check(Struct, frozen=True):
    id: str
    split: str
    unit: str  # "tokens" or "GiB"
    logged: float
    predicted: float
    error: float  # relative, signed; 0 when both are 0
    within: bool
    by_gib: bool  # within only through the 0.2 GiB floor (the relative error is above 10 %)
    verdict_right: bool
    verdict_asserted: bool
    tokens_logged: int | None
    tokens_predicted: int
    classes: tuple[str, ...] = ()
    verdict: str = ""
    # A flag the log does not publish (the row's `unlogged:`): the prediction over the flag's allowed range (low, high in
    # the check's unit), and whether the log passes only through it (inside that range and within the tolerance at some
    # value of the flag, not at the default the point prediction above keeps). None / False for every other log.
    unlogged_range: tuple[float, float] | None = None
    by_unlogged: bool = False


def _split(row: dict) -> str:
    """ "fit" (the table's fit split: the activation factor), "fit:<term>" for a log whose logged figure is one of the
    values a constant is the median of (non-torch memory with more GPUs, the V1 sampler rate), else "held out"."""
    if row["id"] in table()["split"]["fit"]:
        return "fit"
    if row["id"] in _sampler_rows():
        return "fit:sampler"
    if row["id"] in _non_torch_rows():
        return "fit:non-torch"
    return "held out"


def verdict_right(row: dict, r: fit.Fit) -> bool:
    """vLLM started: `plan fit` must not say "does not fit"; it failed: `plan fit` must not say "fits"."""
    started = row.get("outcome", "started" if row.get("started") else "refused") == "started"
    return r.verdict != "does not fit" if started else r.verdict != "fits"


UNLOGGED_STEPS = 64  # values tried between the ends of an unlogged flag's range (geometric steps, both ends included)


def unlogged_values(low: int, high: int) -> list[int]:
    """Integer values from low to high, both included, in UNLOGGED_STEPS geometric steps."""
    if high <= low:
        return [low]
    return sorted({low, high} | {round(low * (high / low) ** (i / UNLOGGED_STEPS)) for i in range(1, UNLOGGED_STEPS)})


def _within_unlogged(row: dict, unit: str, want: float, slack: float) -> tuple[tuple[float, float] | None, bool]:
    """The row's `unlogged:` flags (one at a time, the others at the row's values): the predicted range over each flag's
    allowed values, and whether the log is within `slack` of the prediction at some value (as it would have to be were
    the flag logged at that value)."""
    ranges: list[tuple[float, float]] = []
    ok = False
    for flag, spec in (row.get("unlogged") or {}).items():
        low, high = spec["range"]
        got = []
        for value in unlogged_values(int(low), int(high)):
            r = predict({**row, "flags": {**row["flags"], flag: value}})
            got.append(float(r.kv_tokens) if unit == "tokens" else r.kv_cache_gib)
        ranges.append((min(got), max(got)))
        ok = ok or any(abs(g - want) <= slack for g in got)
    if not ranges:
        return None, False
    return (min(lo for lo, _ in ranges), max(hi for _, hi in ranges)), ok


def check(row: dict) -> Check:
    r = predict(row)
    logged = row["logged"]
    per_token_gib = r.kv_bytes_per_token / GIB
    # A log the table compares on GiB because its token count is the minimum over the workers (vllm#13061) is compared
    # on tokens here: the model sizes the worker that sets that minimum (V0's driver, which alone samples).
    compare_gib = row.get("compare_on") == "kv_cache_gib" and not (r.engine == "V0" and r.gpus > 1 and "kv_tokens" in logged)
    if not compare_gib and ("kv_tokens" in logged or "gpu_blocks" in logged):
        want: float = logged.get("kv_tokens", logged.get("gpu_blocks", 0) * profiler.BLOCK_SIZE)
        got: float = r.kv_tokens
        slack = max(TOLERANCE * want, TOLERANCE_GIB / per_token_gib)
        unit = "tokens"
    else:
        want, got = logged["kv_cache_gib"], r.kv_cache_gib
        slack = max(TOLERANCE * abs(want), TOLERANCE_GIB)
        unit = "GiB"
    error = 0.0 if want == got else (got - want) / abs(want) if want else float("inf")
    point_within = abs(got - want) <= slack
    unlogged_range, range_within = _within_unlogged(row, unit, want, slack)
    return Check(
        id=row["id"],
        split=_split(row),
        unit=unit,
        logged=want,
        predicted=round(got, 2),
        error=error,
        within=point_within or range_within,
        by_gib=abs(got - want) > TOLERANCE * abs(want) and abs(got - want) <= slack,
        verdict_right=verdict_right(row, r),
        verdict_asserted="verdict_not_asserted" not in row,
        tokens_logged=logged.get("kv_tokens", logged["gpu_blocks"] * profiler.BLOCK_SIZE if "gpu_blocks" in logged else None),
        tokens_predicted=r.kv_tokens,
        classes=tuple(classes(row)),
        verdict=r.verdict,
        unlogged_range=unlogged_range,
        by_unlogged=range_within and not point_within,
    )


class WeightCheck(Struct, frozen=True):
    id: str
    logged_gib: float
    predicted_gib: float
    error: float
    classes: tuple[str, ...]


def weight_rows() -> list[dict]:
    """Logs with the per-GPU weights vLLM loaded and a catalogued architecture (any version, any outcome)."""
    return [
        r
        for r in table()["logs"]
        if "weights_gib" in (r.get("logged") or {})
        and arch_of(r) is not None
        and "weights_not_comparable" not in r
        and not (r.get("quantization") == "gguf")
    ]


def weight_check(row: dict) -> WeightCheck:
    arch = arch_of(row)
    assert arch is not None
    s = serving(row)
    dtype, _ = fit.effective_dtype(arch, fit.Gpu("x", row.get("compute_capability") or GENERIC_CC, 80.0, "", True), s.dtype)
    quant = fit.known_format(s.quantization)
    cc = gpu_of(row).cc if row.get("compute_capability") else None  # a layout that depends on the GPU needs it named
    eng = profiler.engine(s.vllm_version or profiler.newest_pinned(), gpu_of(row).cc, s.engine)
    got = fit.stage_weights_gib(arch, dtype, quant, s, cc, eng)[0]  # rank 0 (first stage) is the worker vLLM's log shows
    got += logged_lora_gib(arch, dtype, s, eng)
    want = float(row["logged"]["weights_gib"])
    return WeightCheck(row["id"], want, round(got, 3), (got - want) / want, tuple(classes(row)))


def logged_lora_gib(arch: models.ModelArch, dtype: str, s: fit.Serving, eng: profiler.Engine) -> float:
    """The LoRA slots in vLLM's logged weights figure: from V0 0.8.0 (and on V1) load_model wraps the model in the
    LoRA manager, which allocates the slots, inside the DeviceMemoryProfiler that measures the weights ("Model
    loading took"), so the logged figure is weights + slots (first stage's layers). Earlier V0 logs "Loading model
    weights took" before it builds the manager: no slots in the figure (profiler.lora_in_budget)."""
    if not profiler.lora_in_budget(eng):
        return 0.0
    layers = len(parallel.stage_layers(arch.layers, s.pipeline_parallel)[0])
    slots = parallel.lora_parameters_per_rank(arch, s.gpus, layers, s.max_loras, s.max_lora_rank)
    return slots * fit.DTYPE_BYTES[dtype] / GIB


def verdict_rows() -> list[dict]:
    """Every log with a catalogued architecture and a stated outcome (not those the table says not to test: their
    flags or version are not known, or something outside vLLM caused the failure)."""
    return [
        r for r in table()["logs"] if arch_of(r) is not None and ("outcome" in r or "started" in r) and not r.get("not_tested")
    ]


def verdict_of(row: dict) -> tuple[str, list[str]]:
    """(verdict, reasons) of `plan fit` for the log: the whole model where the total memory is logged (its problems,
    and the sampler warm-up risk of a "tight" verdict), else the refusals that do not depend on memory."""
    arch = arch_of(row)
    assert arch is not None
    if row.get("total_gpu_memory_gib") is not None and _version_ok(row):
        r = predict(row)
        return r.verdict, r.problems + [a for a in r.assumptions if a.startswith(fit.WARMUP_RISK)]
    s = serving(row)
    gpu = gpu_of(row)
    eng = profiler.engine(s.vllm_version or profiler.newest_pinned(), gpu.cc, s.engine)
    found = parallel.problems(arch, s.gpus, s.pipeline_parallel, s.data_parallel, s.expert_parallel, eng.name)
    _, dtype_problem = fit.effective_dtype(arch, gpu, s.dtype)
    found += [dtype_problem] if dtype_problem and row.get("compute_capability") else []
    return ("does not fit" if found else "tight"), found


def median_by_class(checks: list[Check]) -> dict[str, tuple[float, int]]:
    """Signed median KV error and count per class (asserted logs only)."""
    out = {}
    for c in CLASSES:
        errs = [k.error for k in checks if c in k.classes and k.verdict_asserted]
        if errs:
            out[c] = (statistics.median(errs), len(errs))
    return out


def fit_non_torch_multi_gpu() -> dict[str, float]:
    """Median per GPU generation (profiler.multi_gpu_key) of the non-torch memory per GPU logged with more than one
    GPU (TP x PP > 1); logs whose GPU held other processes' memory are left out."""
    found: dict[str, list[float]] = {}
    for key, _, value in _non_torch_values():
        found.setdefault(key, []).append(value)
    return {name: statistics.median(values) for name, values in found.items()}


def _non_torch_rows() -> set[str]:
    return (
        {row_id for _, row_id, _ in _non_torch_values()}
        | {row_id for row_id, _ in _non_torch_one_gpu_values("v0")}
        | {row_id for row_id, _ in _non_torch_one_gpu_values("v1")}
    )


def fit_non_torch_v0_baseline() -> float:
    """Median of the non-torch memory logged on one GPU by V0 from 0.6.5 (measured from a start-up baseline), outside
    the small-GPU class (whose logs are held out to test it)."""
    return statistics.median(value for _, value in _non_torch_one_gpu_values("v0"))


def fit_non_torch_v1_one_gpu() -> float:
    """Median of the non-torch memory logged on one GPU by V1 (measured from a start-up snapshot), outside the
    small-GPU class (whose logs are held out to test it)."""
    return statistics.median(value for _, value in _non_torch_one_gpu_values("v1"))


def _non_torch_one_gpu_values(engine: str) -> list[tuple[str, float]]:
    """(log id, non-torch GiB) of the single-GPU logs of the engine that print it and measure from a start-up
    baseline (V0 from 0.6.5; V1): one GPU named (not "GPUs"), no other processes' memory, not tagged small_gpu."""
    out: list[tuple[str, float]] = []
    for row in table()["logs"]:
        lg, f = row.get("logged") or {}, row.get("flags") or {}
        if "non_torch_gib" not in lg or "other_memory_gib" in row or "small_gpu" in (row.get("tags") or []):
            continue
        if (f.get("tensor_parallel_size") or 1) * (f.get("pipeline_parallel_size") or 1) > 1:
            continue
        if re.search(r"\bGPUs\b|^\s*\d+\s*x", str(row.get("gpu") or "")):
            continue  # more than one GPU, or a count the log does not give
        s = serving(row)
        eng = profiler.engine(s.vllm_version or "0.0", gpu_of(row).cc, s.engine)
        if eng.name != engine or profiler.device_wide_non_torch(eng):
            continue
        if engine == "v0" and profiler.parse_version(eng.version) < (0, 6, 5):
            continue
        out.append((row["id"], float(lg["non_torch_gib"])))
    return out


def _non_torch_values() -> list[tuple[str, str, float]]:
    """(GPU generation key, log id, non-torch GiB per GPU) of the multi-GPU logs that print it and name their GPU's
    compute capability."""
    out: list[tuple[str, str, float]] = []
    for row in table()["logs"]:
        lg, f = row.get("logged") or {}, row.get("flags") or {}
        if "non_torch_gib" not in lg or "other_memory_gib" in row or not row.get("compute_capability"):
            continue
        if (f.get("tensor_parallel_size") or 1) * (f.get("pipeline_parallel_size") or 1) < 2:
            continue
        out.append((profiler.multi_gpu_key(gpu_of(row).cc), row["id"], float(lg["non_torch_gib"])))
    return out


SAMPLER_BOUND = 1.25  # a logged activation peak this much above the forward-pass estimate is the sampler's
# ... unless the rate it implies is more than the sampler can hold: 64 B per (sequence x vocabulary entry) is 16 fp32
# copies of the logits, where the sampler keeps logits, probabilities, log-probabilities and a sort's values and int64
# indices (about 24 B). Above it the peak is the forward pass the estimate misses (vllm#15196: 40000 batched tokens of
# an MLA model, 164 B; the p4d DeepSeek-Coder log: 2 sequences, 1887 B), not the sampler.
SAMPLER_MAX_BYTES = 64.0


def fit_sampler_bytes(engine: str) -> float:
    """Median bytes per (sequence x vocabulary entry) of the engine's logs whose logged activation peak is the
    sampler's (more than SAMPLER_BOUND x the forward-pass estimate, at a rate of at most SAMPLER_MAX_BYTES)."""
    return statistics.median(value for _, eng, value in _sampler_values() if eng == engine)


def _sampler_rows() -> set[str]:
    return {row_id for row_id, _, _ in _sampler_values()}


def _forward(row: dict, arch: models.ModelArch, tokens: int) -> tuple[profiler.Term, str]:
    """The forward pass's activation estimate for a log's model, parallelism, version, format and GPU, and where it
    peaks (profiler.forward_peak)."""
    s, cc = serving(row), gpu_of(row).cc
    version, dtype_bytes = s.vllm_version or "", fit.DTYPE_BYTES.get(str(row.get("dtype")), 2)
    resolved, eng, _ = _resolved(arch, row)
    dtype = fit.effective_dtype(arch, gpu_of(row), resolved.dtype)[0]
    copied = fit.offloaded_layer_bytes(arch, dtype, s.quantization, resolved, cc, eng)
    term = profiler.forward_activation(tokens, arch, s.gpus, dtype_bytes, version, s.quantization, cc, s.expert_parallel, copied)
    where = profiler.forward_peak(arch, s.gpus, version, s.quantization, cc, s.expert_parallel, tokens, copied, dtype_bytes)
    return term, where[0]


def _sampler_values() -> list[tuple[str, str, float]]:
    """(log id, engine, bytes per sequence x vocabulary entry) of the sampler-bound logs that name their engine (not
    the known KV misses)."""
    found: list[tuple[str, str, float]] = []
    for row in table()["logs"]:
        lg, f, arch = row.get("logged") or {}, row.get("flags") or {}, arch_of(row)
        if arch is None or "activation_peak_gib" not in lg or row.get("engine") not in ("V0", "V1"):
            continue
        if row["id"] in KNOWN_MISSES["kv"]:
            continue  # a log whose activation the model is known to miss sets no rate
        if arch.vision_parameters:
            continue  # a multimodal model's profile also runs its vision encoder on dummy images: not the sampler alone
        seqs, tokens = f.get("max_num_seqs"), f.get("max_num_batched_tokens")
        if not seqs or not tokens:
            continue
        rate = lg["activation_peak_gib"] * GIB / (seqs * arch.vocab_size)
        forward = _forward(row, arch, tokens)[0].gib
        if lg["activation_peak_gib"] > SAMPLER_BOUND * forward and rate <= SAMPLER_MAX_BYTES:
            found.append((row["id"], row["engine"].lower(), rate))
    return found


class ActivationCheck(Struct, frozen=True):
    id: str
    logged_gib: float
    forward_gib: float  # profiler.forward_activation
    where: str  # the forward's peak, as the term says


def activation_checks() -> list[ActivationCheck]:
    """The logs whose activation peak the forward pass sets (not more than SAMPLER_BOUND x the forward estimate, so
    not the sampler's), logged (or peak torch - weights) against profiler.forward_activation: the test of
    profiler.LIVE_HIDDEN and mlp_frees_gate_up, which nothing is fitted to."""
    found: list[ActivationCheck] = []
    for row in table()["logs"]:
        lg, f, arch = row.get("logged") or {}, row.get("flags") or {}, arch_of(row)
        if arch is None or not f.get("max_num_batched_tokens"):
            continue
        if "activation_peak_gib" in lg:
            peak = lg["activation_peak_gib"]
        elif "peak_torch_gib" in lg and "weights_gib" in lg:
            peak = lg["peak_torch_gib"] - lg["weights_gib"]
        else:
            continue
        term, where = _forward(row, arch, f["max_num_batched_tokens"])
        if peak <= SAMPLER_BOUND * term.gib:
            found.append(ActivationCheck(row["id"], peak, term.gib, where))
    return found


# Logs the model is known to miss, with why; the tests mark them xfail(strict=True), so a fix shows as a failure
# to remove the entry. Every entry is also in the report (docs/sizing.md).
KNOWN_MISSES: dict[str, dict[str, str]] = {
    "kv": {},
    "weights": {},
    "verdict": {},
}


# Classes whose signed median KV error is outside +-3 %, with why (the test requires exactly these to be outside).
KNOWN_CLASS_MISSES: dict[str, str] = {}


def class_table(checks: list[Check], weights: list[WeightCheck]) -> list[tuple[str, int, str, str, int, str]]:
    """Per class: (class, KV logs, signed median KV error, worst |KV error|, weight logs, worst |weight error|)."""
    out = []
    for c in CLASSES:
        kv = [k.error for k in checks if c in k.classes and k.verdict_asserted]
        w = [x.error for x in weights if c in x.classes]
        out.append(
            (
                c,
                len(kv),
                f"{statistics.median(kv):+.1%}" if kv else "-",
                f"{max(abs(e) for e in kv):.1%}" if kv else "-",
                len(w),
                f"{max(abs(e) for e in w):.1%}" if w else "-",
            )
        )
    return out


def class_table_markdown() -> str:
    """The per-class table docs/sizing.md shows (tests/sizing/test_calibration.py checks it is current)."""
    checks = [check(r) for r in rows()]
    weights = [weight_check(r) for r in weight_rows()]
    lines = [
        "| class | KV logs | signed median KV error | worst KV error | weight logs | worst weight error |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {c} | {n} | {med} | {worst} | {wn} | {ww} |" for c, n, med, worst, wn, ww in class_table(checks, weights)]
    return "\n".join(lines)


KV_BYTES_TOLERANCE = 0.02  # the logged GiB are rounded to 0.01; only caches of 1 GiB and more are compared


class KvBytesCheck(Struct, frozen=True):
    id: str
    logged: float  # bytes per token per GPU, from the log's figures
    predicted: int
    error: float
    how: str


def _kv_bytes_logged(row: dict) -> tuple[float, str] | None:
    lg, f = row.get("logged") or {}, row.get("flags") or {}
    if "kv_needed_gib" in lg and f.get("max_model_len"):
        return lg["kv_needed_gib"] * GIB / f["max_model_len"], "kv_needed_gib / max_model_len (V1 refusal)"
    tokens = lg.get("kv_tokens", lg.get("gpu_blocks", 0) * profiler.BLOCK_SIZE)
    if lg.get("kv_cache_gib", 0) >= 1 and tokens:
        return lg["kv_cache_gib"] * GIB / tokens, "kv_cache_gib / KV tokens"
    return None


def kv_bytes_rows() -> list[dict]:
    """Logs from which the KV bytes per token per GPU follow (a V1 refusal's GiB needed for max_model_len, or a KV
    cache of 1 GiB or more with its token count), one pipeline stage, catalogued architecture whose sliding windows
    (if any) vLLM counts as modelled (sizing/hybrid.py; a V1 refusal of a hybrid model is not one of them)."""
    out = []
    for r in table()["logs"]:
        arch = arch_of(r)
        f = r.get("flags") or {}
        if arch is None or f.get("pipeline_parallel_size", 1) > 1 or r.get("compare_on"):
            continue
        if arch.sliding_layers:
            _, eng, _ = _resolved(arch, r)
            if not fit.sliding_counted_as_vllm(arch, eng, 1) or "kv_needed_gib" in (r.get("logged") or {}):
                continue
        if _kv_bytes_logged(r) is not None:
            out.append(r)
    return out


def _resolved(arch: models.ModelArch, row: dict) -> tuple[fit.Serving, profiler.Engine, list[str]]:
    """The row's serving with the version's defaults filled in, as plan fit resolves it (fit.resolve)."""
    return fit.resolve(arch, gpu_of(row), serving(row))


def kv_bytes_check(row: dict) -> KvBytesCheck:
    """Bytes per reported KV token: the structure's per token, or for a hybrid model (sizing/hybrid.py) the logged
    KV cache over the tokens the manager's grouping makes of it."""
    arch = arch_of(row)
    assert arch is not None
    logged, how = _kv_bytes_logged(row)  # type: ignore[misc]  # kv_bytes_rows() keeps rows where it is not None
    s, eng, _ = _resolved(arch, row)
    dtype, _ = fit.effective_dtype(arch, gpu_of(row), s.dtype)
    got = fit.kv_bytes_per_token(arch, dtype, s.kv_cache_dtype, s.gpus, eng)
    kv_gib = (row.get("logged") or {}).get("kv_cache_gib", 0)
    cap = fit.capacity_of(arch, s, eng, 1, got)(kv_gib)
    if cap.layout and cap.tokens:
        got = round(kv_gib * GIB / cap.tokens)
        how += f" ({cap.layout})"
    return KvBytesCheck(row["id"], round(logged, 1), got, (got - logged) / logged, how)


class HybridCheck(Struct, frozen=True):
    id: str
    tokens_logged: int
    tokens: int
    concurrency_logged: float | None  # None where the log read does not show the line
    concurrency: float
    padding_logged: int | None  # None where the log read is an excerpt that would not show the warning
    padding: int
    full_attention_tokens: int  # every layer counted as full attention, as before sizing/hybrid.py


def hybrid_rows() -> list[dict]:
    """calibration.yaml `hybrid_logs`: start-ups of models mixing full and sliding-window attention."""
    return list(table().get("hybrid_logs") or [])


def hybrid_check(row: dict) -> HybridCheck:
    """The logged KV memory through sizing/hybrid.py, against the logged tokens, concurrency and padding. The memory is
    `kv_cache_bytes` where the run fixed it (--kv-cache-memory-bytes), else the printed GiB; the page holds the row's
    `block_size` tokens where the platform's attention backend is not CUDA's 16."""
    lay, f, lg = row["layout"], row["flags"], row["logged"]
    available = lg["kv_cache_bytes"] if "kv_cache_bytes" in lg else lg["kv_cache_gib"] * GIB
    block = lay.get("block_size", profiler.BLOCK_SIZE)
    cap = hybrid.capacity(
        available, lay["layer_token_bytes"], lay["layers"], lay["sliding_layers"], lay["window"],
        f["max_model_len"], f["max_num_batched_tokens"], row["vllm"], block,
    )  # fmt: skip
    page = block * lay["layer_token_bytes"] * lay["layers"]
    return HybridCheck(
        row["id"], lg["kv_tokens"], cap.tokens, lg.get("max_concurrency"), round(cap.concurrency, 2),
        lg.get("padding_layers"), cap.padding,
        int(available // page) * block,
    )  # fmt: skip
