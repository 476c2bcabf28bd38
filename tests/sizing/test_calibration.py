"""`plan fit` against published vLLM startup logs (sizing/data/calibration.yaml), and the usable memory per GPU kind.

Each log is sized with its own total_gpu_memory, vLLM version and flags. KV tokens (or, where the log gives only
GiB, KV cache GiB) must be within 10 % or 0.2 GiB of KV cache, and the verdict (started / refused) right.
Run with -s to see the table: median and worst error, fit and held-out rows separately.
"""

import statistics

import pytest

from gpufleet.sizing import calibration, fit, profiler
from gpufleet.stacks.catalog import gpu_kinds

ROWS = calibration.rows()
IDS = [r["id"] for r in ROWS]


def test_the_table_has_enough_logs_and_a_split_fixed_before_fitting():
    logs = calibration.table()["logs"]
    split = calibration.table()["split"]
    assert len(logs) >= 12
    assert sum(1 for r in ROWS if not r["started"]) >= 3  # refusals
    assert len(split["held_out"]) >= 4 and not set(split["fit"]) & set(split["held_out"])
    assert set(split["fit"]) | set(split["held_out"]) == set(IDS)  # every tested log is on one side
    for row in logs:
        assert row["url"].startswith("https://github.com/") and row["vllm"] and row["gpu"] and row["logged"]


def test_activation_factor_is_the_fit_on_the_fit_split():
    assert round(calibration.fit_activation_factor(), 1) == profiler.ACTIVATION_FACTOR


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_kv_within_tolerance(row):
    c = calibration.check(row)
    if not c.verdict_asserted:
        pytest.skip(f"{row['id']}: {row['verdict_not_asserted']}")
    assert c.within, f"{c.id}: logged {c.logged} {c.unit}, predicted {c.predicted} ({c.error:+.1%})"


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_verdict(row):
    c = calibration.check(row)
    if not c.verdict_asserted:
        pytest.skip(f"{row['id']}: {row['verdict_not_asserted']}")
    assert c.verdict_right, f"{c.id}: vLLM {'started' if row['started'] else 'refused'}; plan fit says the opposite"


def test_print_error_table(summary):
    """The error table of plan fit against every log, shown in the run's summary (tests/conftest.py `summary`)."""
    checks = [calibration.check(r) for r in ROWS]
    lines = [f"{'log':24} {'split':9} {'unit':6} {'logged':>10} {'plan fit':>10} {'error':>8}  verdict"]
    for c in checks:
        lines.append(
            f"{c.id:24} {c.split:9} {c.unit:6} {c.logged:>10} {c.predicted:>10} {c.error:>+8.1%}  "
            + ("right" if c.verdict_right else "WRONG")
            + ("" if c.verdict_asserted else " (not asserted)")
            + (" (within the 0.2 GiB floor, not 10 %)" if c.by_gib else "")
            + (
                f"  [tokens: logged {c.tokens_logged}, plan fit {c.tokens_predicted}]"
                if c.unit == "GiB" and c.tokens_logged
                else ""
            )
        )
    for split in ("fit", "held out"):
        errs = [abs(c.error) for c in checks if c.split == split and c.verdict_asserted]
        lines.append(f"{split}: median |error| {statistics.median(errs):.1%}, worst {max(errs):.1%} over {len(errs)} logs")
    errs = [abs(c.error) for c in checks if c.verdict_asserted]
    lines.append(f"all asserted: median |error| {statistics.median(errs):.1%}, worst {max(errs):.1%} over {len(errs)} logs")
    for line in ["plan fit against published vLLM startup logs (tests/sizing/test_calibration.py):", *lines]:
        summary(line)
    assert all(c.within for c in checks if c.verdict_asserted)


OTHER = [r for r in ROWS if "other_memory_gib" in r]


@pytest.mark.parametrize("row", OTHER, ids=[r["id"] for r in OTHER])
def test_other_processes_memory_is_an_input_read_from_the_log_not_a_fit(row):
    """A log whose GPU held memory of something other than the vLLM worker: the figure is the logged non-torch memory
    minus the model's own non-torch term, it was in use before the profile run, and it is what decides the verdict."""
    lg = row["logged"]
    assert row["other_memory_gib"] == round(lg["non_torch_gib"] - profiler.NON_TORCH_GIB, 2)
    assert "not predicted" in row["other_memory_source"]
    # 0.6.4.post1 logs the device's use before profiling: weights + everything non-torch was already there
    assert abs(lg["initial_memory_usage_gib"] - lg["weights_gib"] - lg["non_torch_gib"]) < 0.015
    assert lg["memory_usage_post_profile_gib"] - lg["initial_memory_usage_gib"] < 0.015
    alone = calibration.predict({**row, "other_memory_gib": 0.0})
    assert alone.fits != row["started"]  # without the given memory the verdict would be wrong: it is not a fitted term


# Usable memory per GPU kind: each published figure is the device total one source quoted for that GPU model.
PUBLISHED = {
    "T4": (14.58, "datawhalechina/self-llm/issues/162"),
    "A10": (22.18, "OpenBMB/MiniCPM-V/issues/640"),
    "V100-32G": (31.74, "liucongg/ChatGLM-Finetuning/issues/73"),
    "A100-40G": (39.38, "vllm-project/vllm/issues/16570"),
    "A100-80G": (79.25, "HiDream-ai/VAREdit/issues/6"),
}


@pytest.mark.parametrize("kind", sorted(PUBLISHED))
def test_usable_memory_per_gpu_kind_is_sourced(kind):
    gib, source = PUBLISHED[kind]
    gpu = fit.as_gpu(gpu_kinds()[kind])
    assert gpu.memory_gib == gib and source in gpu.memory_source and not gpu.memory_estimate
    assert gpu.memory_gib < gpu.nominal_gib  # CUDA reports less than the nominal size


def test_every_catalog_gpu_has_usable_memory_and_unsourced_ones_say_estimate():
    for name, kind in gpu_kinds().items():
        row = fit.usable_memory()[name]
        assert row["quality"] in ("published", "estimate") and row["source"]
        assert fit.as_gpu(kind).memory_estimate == (row["quality"] == "estimate")


def test_a100_40g_usable_memory_matches_the_calibration_log_of_that_gpu():
    (row,) = [r for r in calibration.table()["logs"] if r["id"] == "i16570-a100-40g-vl72b"]
    assert fit.as_gpu(gpu_kinds()["A100-40G"]).memory_gib == row["total_gpu_memory_gib"]


def test_pinned_versions_read_lightly_match_the_validated_recipes():
    from gpufleet.images.recipes import load_recipe, recipe_names
    from gpufleet.sizing import profiler

    expected: dict[str, list[str]] = {}
    for name in recipe_names():
        recipe = load_recipe(name)
        if v := recipe.pins.get("vllm"):
            expected.setdefault(v, []).extend(recipe.gpus)
    assert profiler.pins() == expected
