"""What a spec must satisfy to be declared on Alibaba Cloud, without importing the provider (used by stack validation)."""

from __future__ import annotations

from gpufleet.components.alicloud import names


def spec_problems(spec) -> list[tuple[str, str]]:
    if spec.model.source.startswith("cos://"):
        return [
            (
                "fleet.model.source",
                "a cos:// source is Tencent COS; Alibaba nodes fetch from oss:// (OSS, with the node's RAM role) "
                "or https:// — copy the archive to an OSS bucket in the region and point source at it",
            )
        ]
    return names.problems(spec)


def notes(spec) -> list[str]:
    lb = spec.load_balancer
    return [
        f"load_balancer.request_timeout_s {lb.request_timeout_s}: the HTTP listener answers 504 to a request that has not "
        "finished within it; stream long generations (stream: true) or keep max_tokens within what the node generates in "
        "that time (the gateway itself waits serving.gateway.read_timeout_s)"
    ]
