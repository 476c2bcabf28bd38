"""How vLLM V1's hybrid KV cache manager holds a model whose layers mix full and sliding-window attention (Gemma 2 and
3, gpt-oss, Qwen2 with use_sliding_window), and the KV tokens it then reports (sizing/data/vllm_engines.yaml
`hybrid_kv_cache`, read from the 0.8.5 to 0.33.0 wheels, vllm/v1/core/kv_cache_utils.py and
vllm/v1/kv_cache_interface.py).

- The layers are grouped by attention type into groups of one size (the smaller type's layer count; from 0.15.0 the
  larger one's when it is below 1.25 times the smaller, from 0.19.0 1.5 times); a type whose count the size does not divide gets padding
  layers ("Add N padding layers, may waste at most X% KV cache memory"). The memory is `group_size` pools of
  `num_blocks` pages of one layer each: num_blocks = available // page // group_size.
- Up to 0.20 the log's "GPU KV cache size" is num_blocks // groups x block_size: every layer counted as full
  attention, padding layers included. From 0.21.0 it is the maximum concurrency x max_model_len, where a request
  takes cdiv(max_model_len, block) blocks in a full-attention group and cdiv(min(window - 1 + in-flight tokens,
  max_model_len), block) + 1 in a sliding one; in-flight tokens are max_num_batched_tokens, twice that from 0.27.0
  (async scheduling, on by default, keeps two batches in flight at pipeline parallel 1).
- vLLM refuses to start when one request of max_model_len needs more than the available memory: up to 0.11 the
  layers' own blocks summed, from 0.15.0 group_size pages for each block a request takes in every group (padding
  included).

A model whose layers all use a sliding window, or that runs under pipeline parallelism, is not modelled here: its
layers are counted as full attention (fit.py notes it).
"""

from __future__ import annotations

from msgspec import Struct

from gpufleet.sizing import profiler


class Capacity(Struct, frozen=True):
    tokens: int  # "GPU KV cache size: N tokens" as this version logs it
    concurrency: float  # "Maximum concurrency for max_model_len tokens per request"
    needed_bytes: int  # what one request of max_model_len takes; more than the available memory is refused
    max_len: int  # the longest max_model_len that fits ("the estimated maximum model length")
    layout: str  # the grouping, for the notes ("" where the layers are not grouped)
    padding: int = 0  # padding layers the grouping adds ("Add N padding layers")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def applies(layers: int, sliding_layers: int, version: str, engine: str, pipeline_parallel: int) -> bool:
    """The manager groups this model's layers: V1 from the first version read with it on by default, mixed types."""
    data = profiler.hybrid_kv_cache()
    return (
        engine == "v1"
        and pipeline_parallel == 1
        and 0 < sliding_layers < layers
        and profiler.parse_version(version) >= profiler.parse_version(data["from"])
    )


def groups(full: int, sliding: int, version: str) -> tuple[int, int, int]:
    """(group size, full-attention groups, sliding-window groups): the smaller kind's count, or from 0.15.0 the larger
    one's when it is below `below` times the smaller (vllm_engines.yaml hybrid_kv_cache.larger_group)."""
    size = min(full, sliding)
    rule = profiler.newest_read(profiler.hybrid_kv_cache()["larger_group"], version)
    if rule and max(full, sliding) < size * rule["below"]:
        size = max(full, sliding)
    return size, _cdiv(full, size), _cdiv(sliding, size)


def capacity(
    available: float,
    layer_token_bytes: int,
    layers: int,
    sliding_layers: int,
    window: int,
    max_model_len: int,
    max_num_batched_tokens: int,
    version: str,
    block: int = profiler.BLOCK_SIZE,
) -> Capacity:
    """The KV cache of `available` bytes on one GPU, pages of `layer_token_bytes` per token and layer, `block` tokens a
    page (16 on CUDA; an attention backend may prefer another: FLASH_ATTN on Intel XPU takes 64, 0.28.0
    v1/attention/backends/flash_attn.py get_preferred_block_size)."""
    data = profiler.hybrid_kv_cache()
    v = profiler.parse_version(version)
    page = block * layer_token_bytes
    full_layers = layers - sliding_layers
    size, full_groups, sliding_groups = groups(full_layers, sliding_layers, version)
    num_blocks = max(0, int(available // page // size))
    in_flight = (profiler.newest_read(data["in_flight_batches"], version) or {}).get("batches", 1) * max_num_batched_tokens

    def window_blocks(length: int) -> int:  # blocks a sliding-window layer keeps for one request
        return _cdiv(min(window - 1 + in_flight, length), block) + 1

    def per_request(length: int) -> int:  # blocks one request of `length` tokens takes over all groups
        return full_groups * _cdiv(length, block) + sliding_groups * window_blocks(length)

    def needed(length: int) -> int:  # bytes vLLM checks one request against: padded groups, or the layers alone
        if v >= profiler.parse_version(data["padded_check_from"]):
            return per_request(length) * page * size
        return (full_layers * _cdiv(length, block) + sliding_layers * window_blocks(length)) * page

    blocks = per_request(max_model_len)
    concurrency = num_blocks / blocks
    if v >= profiler.parse_version(data["tokens_by_concurrency_from"]):
        tokens = int(concurrency * max_model_len)
    else:
        tokens = num_blocks // (full_groups + sliding_groups) * block
    low, high = 0, max_model_len  # the longest length whose request fits (vLLM's estimate_max_model_len, bisected)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if needed(mid) <= available else (low, mid - 1)
    padding = (full_groups + sliding_groups) * size - layers
    layout = (
        f"{full_layers} full-attention and {sliding_layers} sliding-window ({window}) layers in "
        f"{full_groups} + {sliding_groups} groups of {size}" + (f", {padding} padding layers" if padding else "")
    )
    return Capacity(tokens, concurrency, needed(max_model_len), low, layout, padding)
