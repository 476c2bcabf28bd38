"""Sizing at its edges: a tied-embedding model split into pipeline stages (the last stage's own LM head), the KV cache
counted in whole vLLM blocks, and the verdict when max_model_len equals the low end of the KV range."""

import pytest

from gpufleet.sizing import calibration, fit, models, parallel, profiler
from gpufleet.stacks.catalog import gpu_kinds

KINDS = gpu_kinds()
CATALOG = models.catalog()
BLOCK = 16  # vLLM's default block_size on CUDA (CacheConfig.block_size)


def test_a_tied_model_under_pipeline_parallel_holds_the_lm_head_on_its_last_stage():
    """meta-llama/Llama-3.2-3B-Instruct's config.json: hidden_size 3072, vocab_size 128256, tie_word_embeddings true.
    In one stage the LM head is the embedding (counted once); under PP 2 vLLM's LlamaForCausalLM builds its own
    ParallelLMHead on the last rank (get_pp_group().is_last_rank), as parallel.py's doc says: by hand,
    first stage 128256 x 3072 = 394,002,432 (the embedding), last stage 3072 (final norm) + 394,002,432 = 394,005,504."""
    m = CATALOG["meta-llama/Llama-3.2-3B-Instruct"]
    assert (m.hidden_size, m.vocab_size, m.tied_embeddings, m.vision_parameters) == (3072, 128256, True, 0)
    (one,) = parallel.rank_params(m, 1, 1, 1, False)
    assert one.outside == 394_002_432 + 3072
    first, last = parallel.rank_params(m, 1, 2, 1, False)
    assert first.outside == 394_002_432
    assert last.outside == 394_005_504


def test_logged_kv_tokens_are_whole_blocks():
    """vLLM logs "GPU KV cache size: N tokens" as num_gpu_blocks x block_size: every such figure in calibration.yaml
    (block size 16, the CUDA default) is a multiple of 16."""
    logged = {r["id"]: r["logged"]["kv_tokens"] for r in calibration.table()["logs"] if "kv_tokens" in r["logged"]}
    assert len(logged) >= 30
    assert {k: v for k, v in logged.items() if v % BLOCK} == {}
    assert profiler.BLOCK_SIZE == BLOCK


@pytest.mark.parametrize("pp", [1, 2, 3])
def test_predicted_kv_tokens_are_whole_blocks(pp):
    """What plan fit predicts is what vLLM can report: whole blocks of 16 tokens, at every pipeline split."""
    for name in ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-3B-Instruct"):
        r = fit.measure(CATALOG[name], KINDS["A10"], fit.Serving(pipeline_parallel=pp, max_model_len=4096, vllm_version="0.10.0"))
        assert r.kv_tokens > 0 and r.kv_tokens % BLOCK == 0, (name, r.kv_tokens)
        assert all(t % BLOCK == 0 for t in r.kv_tokens_range), (name, r.kv_tokens_range)


def test_max_model_len_equal_to_the_low_end_of_the_kv_range_fits():
    """vLLM refuses only a max_model_len *larger than* the tokens the KV cache can store ("... is larger than the
    maximum number of tokens that can be stored in KV cache", quoted in fit.py): a length equal to the low end of the
    range fits even there; one token more is within the model's error, so "tight"."""
    m = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]  # max_position_embeddings 131072: the length is not capped below

    def at(length):
        s = fit.Serving(max_model_len=length, max_num_batched_tokens=4096, max_num_seqs=64, vllm_version="0.10.0")
        return fit.measure(m, KINDS["A10"], s)

    low = at(4096).kv_tokens_range[0]
    assert 4096 < low < m.max_positions
    equal, above = at(low), at(low + 1)
    assert equal.kv_tokens_range[0] == low == above.kv_tokens_range[0]  # the length does not move the KV cache here
    assert equal.problems == [] and equal.verdict == "fits", equal.assumptions
    assert above.verdict == "tight"
