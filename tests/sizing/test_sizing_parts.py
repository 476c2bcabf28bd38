"""Small sizing rules by hand: where Gemma 3's vision encoder sits (sizing/parallel.py) and the boundary of vLLM's
group-size rule for the hybrid KV cache (sizing/hybrid.py)."""

import msgspec

from gpufleet.sizing import hybrid, models, parallel


def test_the_vision_encoder_is_on_the_first_stage_split_over_tp():
    """docs/sizing.md: vLLM loads Gemma 3's SigLIP encoder and projector "with the language model, on the first pipeline
    stage, split over TP". Gemma-3-12B: 416,866,032 + 1152 x 3840 (text hidden) + 1152 (the projector's norm,
    models.vision_parameters) = 421,290,864 parameters; at TP 2 each GPU of the first stage holds half,
    210,645,432."""
    m = models.resolve("google/gemma-3-12b-it")
    assert m.hidden_size == 3840
    assert m.vision_parameters == 416_866_032 + 1152 * 3840 + 1152 == 421_290_864
    text_only = msgspec.structs.replace(m, vision_parameters=0)
    for tp in (1, 2, 4):
        with_vision = parallel.rank_params(m, tp, 1, 1, False)[0].outside
        without = parallel.rank_params(text_only, tp, 1, 1, False)[0].outside
        assert with_vision - without == 421_290_864 / tp
    # pipeline parallel 2: the first stage holds it (split over TP 2), the last none
    stages = parallel.rank_params(m, 2, 2, 1, False)
    bare = parallel.rank_params(text_only, 2, 2, 1, False)
    assert [s.outside - b.outside for s, b in zip(stages, bare, strict=True)] == [210_645_432, 0]


def test_the_larger_kind_sets_the_group_size_only_strictly_below_the_factor():
    """vLLM's _get_kv_cache_groups_uniform_page_size (vllm-project/vllm vllm/v1/core/kv_cache_utils.py):
    `if max_num_layers < min_num_layers * 1.5: group_size = max_num_layers` (1.25 from 0.15.0, 1.5 from 0.19.0,
    sizing/data/vllm_engines.yaml): strict, so at exactly the factor the group size stays the smaller count."""
    # 15 full + 10 sliding: 15 == 1.5 x 10, not below: groups of 10, 2 full groups (5 padding layers) + 1 sliding
    assert hybrid.groups(15, 10, "0.33.0") == (10, 2, 1)
    assert hybrid.groups(15, 10, "0.19.0") == (10, 2, 1)
    # one layer less is below 1.5 x 10: groups of 14
    assert hybrid.groups(14, 10, "0.19.0") == (14, 1, 1)
    # 0.15.0's 1.25: 5 sliding + 4 full, 5 == 1.25 x 4, not below: groups of 4, 1 full + 2 sliding
    assert hybrid.groups(4, 5, "0.15.0") == (4, 1, 2)
