"""The closed choices of the spec that commands offer without loading the spec's models (`plan fit` flags)."""

from typing import Literal

Dtype = Literal["auto", "float16", "bfloat16", "half", "float32"]
# The KV cache dtypes vLLM offers on CUDA (sizing/data/vllm_engines.yaml, read from the pinned wheels).
KvCacheDtype = Literal["auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"]
