"""The closed choices of the spec that commands offer without loading the spec's models (`plan fit` flags)."""

from typing import Literal

Dtype = Literal["auto", "float16", "bfloat16", "half", "float32"]
KvCacheDtype = Literal["auto", "fp8"]
