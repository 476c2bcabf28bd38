"""Prompts and completions are never logged by vLLM: the flags that keep each pinned vLLM quiet.

vLLM 0.10.0 logs every request (prompt included) unless `--disable-log-requests` is given
(vllm/engine/arg_utils.py of the 0.10.0 wheel: `disable_log_requests: bool = False`, flag `--disable-log-requests`).
vLLM 0.33.0 logs requests only when asked (`AsyncEngineArgs.enable_log_requests = False`, flags `--enable-log-requests`
and `--enable-log-outputs`, vllm/engine/arg_utils.py of the 0.33.0 wheel): nothing to add, and stacks may not set them
(stacks/spec.py RESERVED_FLAGS refuses all three in serving.extra_args).
The decision is read from the flag snapshot of the pinned version (sizing/data/vllm_args/<version>.json).
"""

from __future__ import annotations

from gpufleet.sizing import flags


def forced_flags(version: str | None) -> list[str]:
    """Flags appended to `vllm serve` so that vLLM `version` does not log request contents."""
    args = flags.snapshot(version) if version else None
    if not args:
        return []
    own = args.get("--disable-log-requests")
    if own is not None and own.get("dest") == "disable_log_requests":
        return ["--disable-log-requests"]  # logs by default: turn it off
    return []
