"""V1's hybrid KV cache manager (gpufleet/sizing/hybrid.py), against figures worked by hand from vLLM's source
(vllm/v1/core/kv_cache_utils.py, vllm/v1/kv_cache_interface.py of the wheels named in sizing/data/vllm_engines.yaml)
and against gpt-oss-20b's published 0.19.0 start-up (llm-d-planner's sweep, calibration.yaml)."""

import pytest

from gpufleet.sizing import calibration, fit, hybrid, models

GIB = 1 << 30
# Gemma-3-27B's text layers: 62, every sixth full attention (10), the rest a 1024-token window (52); 16 KV heads of
# 128 in bf16: 2 x 16 x 128 x 2 = 8,192 bytes per token and layer; a page is 16 tokens of one layer, 131,072 bytes.
GEMMA3_27B = {"layer_token_bytes": 8192, "layers": 62, "sliding_layers": 52, "window": 1024}


def test_uneven_kinds_are_padded_and_the_padding_is_reported_up_to_0_20():
    # groups of 10 (the full layers' count): 1 full + 6 sliding groups, 70 slots for 62 layers (8 padding layers);
    # 20 GiB = 163,840 pages = 16,384 blocks of 10 pools; logged tokens 16,384 // 7 x 16 = 37,440, where counting
    # every layer as full attention would say 42,272 (13 % more than vLLM reports)
    cap = hybrid.capacity(20 * GIB, **GEMMA3_27B, max_model_len=8192, max_num_batched_tokens=8192, version="0.19.0")
    assert cap.tokens == 37_440
    assert "1 + 6 groups of 10, 8 padding layers" in cap.layout
    assert int(20 * GIB // (16 * 62 * 8192)) * 16 == 42_272


def test_from_0_21_the_tokens_are_concurrency_times_max_model_len():
    # a request of 8,192 takes 512 blocks in the full group and cdiv(min(1023 + 8192, 8192), 16) + 1 = 513 in each
    # sliding one: 3,590 of the 16,384 blocks, concurrency 4.5638, 37,386 tokens
    short = hybrid.capacity(20 * GIB, **GEMMA3_27B, max_model_len=8192, max_num_batched_tokens=8192, version="0.21.0")
    assert short.tokens == 37_386
    assert short.concurrency == pytest.approx(16_384 / 3_590)
    # at 131,072 the windows cap the sliding groups at 577 blocks: 8,192 + 6 x 577 = 11,654 blocks a request
    long = hybrid.capacity(20 * GIB, **GEMMA3_27B, max_model_len=131_072, max_num_batched_tokens=8192, version="0.21.0")
    assert long.tokens == int(16_384 / 11_654 * 131_072) == 184_270
    assert long.needed_bytes == 11_654 * 131_072 * 10  # 14.2 GiB: it starts, where full attention would need 62 GiB


def test_the_group_size_rules():
    # 12 sliding + 13 full (vLLM's own example, gpt-oss-20b with an EAGLE drafter): groups of 13 from 0.15.0 (13 < 1.25 x 12)
    assert hybrid.groups(13, 12, "0.19.0") == (13, 1, 1)
    assert hybrid.groups(13, 12, "0.15.0") == (13, 1, 1)
    assert hybrid.groups(13, 12, "0.11.0") == (12, 2, 1)  # the smaller count only
    assert hybrid.groups(10, 13, "0.15.0") == (10, 1, 2)  # 13 is not below 1.25 x 10
    assert hybrid.groups(10, 13, "0.19.0") == (13, 1, 1)  # but below 1.5 x 10


def test_from_0_27_two_batches_are_in_flight_for_a_window():
    # async scheduling (on by default) keeps two batches in flight: a sliding layer keeps cdiv(min(1023 + 2 x 8192,
    # 131072), 16) + 1 = 1,089 blocks; 8,192 + 6 x 1,089 = 14,726 blocks a request: concurrency 16,384 / 14,726,
    # 145,829 tokens, 14,726 x 131,072 x 10 bytes needed (17.98 GiB)
    cap = hybrid.capacity(20 * GIB, **GEMMA3_27B, max_model_len=131_072, max_num_batched_tokens=8192, version="0.27.0")
    assert cap.tokens == int(16_384 / 14_726 * 131_072) == 145_829
    assert cap.needed_bytes == 14_726 * 131_072 * 10
    tight = hybrid.capacity(16 * GIB, **GEMMA3_27B, max_model_len=131_072, max_num_batched_tokens=8192, version="0.27.0")
    assert tight.needed_bytes > 16 * GIB and tight.max_len < 131_072  # refused, where 0.25.0's reserve would start


def test_up_to_0_11_the_refusal_sums_the_layers_without_padding():
    # 10 full layers x 8,192 blocks + 52 sliding x 577 blocks, 131,072 bytes a page: 13.66 GiB, where the padded groups
    # of 0.15.0 on need 11,654 x 131,072 x 10 (14.23 GiB); with 14 GiB 0.10.0 starts and 0.15.0 refuses
    old = hybrid.capacity(14 * GIB, **GEMMA3_27B, max_model_len=131_072, max_num_batched_tokens=8192, version="0.10.0")
    new = hybrid.capacity(14 * GIB, **GEMMA3_27B, max_model_len=131_072, max_num_batched_tokens=8192, version="0.15.0")
    assert old.needed_bytes == (10 * 8192 + 52 * 577) * 131_072 < 14 * GIB < new.needed_bytes == 11_654 * 131_072 * 10
    assert old.max_len == 131_072 and new.max_len < 131_072


def test_which_versions_group():
    assert hybrid.applies(24, 12, "0.19.0", "v1", 1)
    assert not hybrid.applies(24, 12, "0.8.5", "v1", 1)  # turns every sliding layer into a full one
    assert not hybrid.applies(24, 12, "0.19.0", "v0", 1)
    assert not hybrid.applies(24, 24, "0.19.0", "v1", 1)  # one kind: not grouped
    assert not hybrid.applies(24, 12, "0.19.0", "v1", 2)  # pipeline stages: counted as full attention (noted)


def test_gpt_oss_logged_start_up_is_reproduced_from_its_kv_memory():
    # "Available KV cache memory: 58.47 GiB / GPU KV cache size: 1,277,184 tokens / Maximum concurrency for 8,192
    # tokens per request: 155.75x" (0.19.0, H100, TP 1); 58.47 is rounded to the hundredth of a GiB
    (row,) = [r for r in calibration.table()["logs"] if r["id"] == "llmd-h100-gptoss20b-tp1-sampler-oom"]
    check = calibration.kv_bytes_check(row)
    assert abs(check.error) < 0.001
    assert "1 + 1 groups of 12" in check.how
    cap = hybrid.capacity(58.47 * GIB, 2048, 24, 12, 128, max_model_len=8192, max_num_batched_tokens=8192, version="0.19.0")
    assert cap.concurrency == pytest.approx(155.75, abs=0.05)
    assert cap.tokens == pytest.approx(1_277_184, rel=0.0005)


def test_a_long_context_that_only_the_windows_make_fit_is_not_refused():
    model = models.lookup("openai/gpt-oss-20b")
    assert model is not None
    gpu = fit.Gpu("H100", "9.0", 79.19, "test", False)
    serve = fit.Serving(max_model_len=131_072, vllm_version="0.21.0", gpu_memory_utilization=0.28)
    r = fit.measure(model, gpu, serve)
    full_attention_gib = 131_072 * 24 * 2048 / GIB  # 6 GiB, more than the KV memory left at 0.28
    assert r.kv_cache_gib < full_attention_gib
    assert not any("max seq len" in p for p in r.problems)
    assert any("hybrid manager" in a for a in r.assumptions)
    assert r.max_concurrency == pytest.approx(r.kv_tokens / 131_072, rel=0.001)


@pytest.mark.parametrize("row", calibration.hybrid_rows(), ids=[r["id"] for r in calibration.hybrid_rows()])
def test_published_start_ups_of_sliding_window_models(row):
    """Each log's KV memory gives its logged tokens (within the rounding of the GiB it prints: 0.005 GiB), its
    maximum concurrency (printed to 0.01) and its padding warning."""
    c = calibration.hybrid_check(row)
    assert c.tokens == pytest.approx(c.tokens_logged, rel=0.0005), c
    assert c.concurrency_logged is None or c.concurrency == pytest.approx(c.concurrency_logged, abs=0.011), c
    assert c.padding_logged is None or c.padding == c.padding_logged


def test_counting_every_layer_as_full_attention_was_optimistic_where_vllm_pads():
    checks = {c.id: c for c in map(calibration.hybrid_check, calibration.hybrid_rows())}
    assert len(checks) >= 6
    padded = checks["llmd-h100-gemma3-27b-v019"]
    assert padded.full_attention_tokens / padded.tokens_logged - 1 > 0.12  # 62 layers where vLLM holds 70
    even = checks["llmd-h100-gemma3-12b-v019"]
    assert even.full_attention_tokens == pytest.approx(even.tokens_logged, rel=0.0005)


def test_pipeline_stages_of_a_grouped_model_are_unsure_not_the_safe_side():
    """Under pipeline parallelism vLLM groups each stage's layers (with padding), which hybrid.py does not model:
    counting them as full attention could be optimistic, so the verdict is at best "tight", with the reason."""
    model = models.lookup("google/gemma-2-9b-it")
    assert model is not None
    gpu = fit.Gpu("H100", "9.0", 79.19, "test", False)
    one = fit.measure(model, gpu, fit.Serving(vllm_version="0.19.0", max_model_len=8192))
    two = fit.measure(model, gpu, fit.Serving(vllm_version="0.19.0", max_model_len=8192, pipeline_parallel=2))
    assert one.verdict == "fits"
    assert two.verdict == "tight" and any("under pipeline parallelism" in a for a in two.assumptions)


def test_two_logs_check_the_window_at_a_long_context_and_the_batches_in_flight():
    """gpt-oss-120b on 0.25.1 with 1024 batched tokens at 131072 (the window saving at a long context) and gpt-oss-20b
    on 0.28.0 with its KV memory fixed to the byte (two batches in flight from 0.27.0): each fails under the rule it
    checks taken the other way."""
    rows = {r["id"]: r for r in calibration.hybrid_rows()}
    long = rows["codingagent-h100-gptoss120b-v0251"]
    assert long["flags"]["max_num_batched_tokens"] * 100 < long["flags"]["max_model_len"]
    assert calibration.hybrid_check(long).tokens == pytest.approx(303_646, rel=0.0005)
    assert calibration.hybrid_check(long).full_attention_tokens < 0.6 * 303_646  # the window not saved: half
    two = calibration.hybrid_check(rows["intelarc-b60-gptoss20b-v0280-kvbytes"])
    assert two.tokens == two.tokens_logged == 280_425
    one = hybrid.capacity(7_117_934_592, 2048, 24, 12, 128, 131_072, 2048, "0.26.0", 64)  # one batch in flight
    assert one.tokens == 284_733 and one.tokens / 280_425 - 1 > 0.01
