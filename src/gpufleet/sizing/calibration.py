"""The memory model against published vLLM startup logs (data/calibration.yaml): predictions, errors, the fit.

A log is compared on KV tokens when it logs them (or its GPU blocks, x 16), else on KV cache GiB; "within" means
within 10 % or 0.2 GiB of KV cache, whichever is larger (issue 17). Each log is sized with its own
total_gpu_memory, vLLM version and flags, so the usable-memory catalog is not part of this check. A log whose GPU
held memory of something other than the vLLM worker gives it as other_memory_gib, passed as `--reserved-gib` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpufleet.sizing import fit, models, profiler

DATA = Path(__file__).parent / "data" / "calibration.yaml"
GIB = 2**30
TOLERANCE = 0.10
TOLERANCE_GIB = 0.2


@cache
def table() -> dict:
    from gpufleet import inputs

    return inputs.load_mapping(DATA, "sizing/data/calibration.yaml")


def testable(row: dict) -> bool:
    """Logs from vLLM 0.6 on with a total memory and a text-model architecture in the catalog."""
    return (
        not row.get("not_tested")
        and row.get("total_gpu_memory_gib") is not None
        and row.get("arch") is not None
        and profiler.parse_version(row["vllm"]) >= (0, 6)
    )


def rows() -> list[dict]:
    return [r for r in table()["logs"] if testable(r)]


def predict(row: dict) -> fit.Fit:
    f = row["flags"]
    gpu = fit.Gpu(row["id"], row["compute_capability"], row["total_gpu_memory_gib"], row["total_source"], False)
    s = fit.Serving(
        gpus=f["tensor_parallel_size"],
        dtype=row["dtype"],
        quantization=row["quantization"],
        kv_cache_dtype=f["kv_cache_dtype"],
        max_model_len=f["max_model_len"],
        max_num_seqs=f["max_num_seqs"],
        max_num_batched_tokens=f["max_num_batched_tokens"],
        gpu_memory_utilization=f["gpu_memory_utilization"],
        enforce_eager=f["enforce_eager"],
        vllm_version=row["vllm"],
        reserved_gib=row.get("other_memory_gib", 0.0),
    )
    return fit.measure(models.catalog()[row["arch"]], gpu, s)  # calibration archs are catalog models


@dataclass(frozen=True)
class Check:
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


def check(row: dict) -> Check:
    r = predict(row)
    logged = row["logged"]
    per_token_gib = r.kv_bytes_per_token / GIB
    split = "fit" if row["id"] in table()["split"]["fit"] else "held out"
    if row.get("compare_on") != "kv_cache_gib" and ("kv_tokens" in logged or "gpu_blocks" in logged):
        want: float = logged.get("kv_tokens", logged.get("gpu_blocks", 0) * profiler.BLOCK_SIZE)
        got: float = r.kv_tokens
        slack = max(TOLERANCE * want, TOLERANCE_GIB / per_token_gib)
        unit = "tokens"
    else:
        want, got = logged["kv_cache_gib"], r.kv_cache_gib
        slack = max(TOLERANCE * abs(want), TOLERANCE_GIB)
        unit = "GiB"
    error = 0.0 if want == got else (got - want) / want if want else float("inf")
    return Check(
        id=row["id"],
        split=split,
        unit=unit,
        logged=want,
        predicted=round(got, 2),
        error=error,
        within=abs(got - want) <= slack,
        by_gib=abs(got - want) > TOLERANCE * abs(want) and abs(got - want) <= slack,
        verdict_right=r.fits == row["started"],
        verdict_asserted="verdict_not_asserted" not in row,
        tokens_logged=logged.get("kv_tokens", logged["gpu_blocks"] * profiler.BLOCK_SIZE if "gpu_blocks" in logged else None),
        tokens_predicted=r.kv_tokens,
    )


def fit_activation_factor() -> float:
    """Least squares through the origin of the fit split's activation peaks (logged, or peak torch - weights)
    against batched tokens x hidden x 2 B."""
    num = den = 0.0
    for row in table()["logs"]:
        if row["id"] not in table()["split"]["fit"]:
            continue
        lg = row["logged"]
        peak = lg.get("activation_peak_gib", lg.get("peak_torch_gib", 0) - lg.get("weights_gib", 0))
        x = row["flags"]["max_num_batched_tokens"] * models.catalog()[row["arch"]].hidden_size * 2 / GIB
        num += peak * x
        den += x * x
    return num / den
