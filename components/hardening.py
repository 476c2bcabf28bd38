"""Preview notes for the endpoint's TLS and the hardening the pinned providers cannot declare (docs/tls.md)."""

from __future__ import annotations

from gpufleet import contract


def notes(spec) -> list[str]:
    lb = spec.load_balancer
    out = []
    if lb.tls is None:
        if lb.public:
            out.append(
                f"load_balancer.tls is not set: the {spec.environment} endpoint is plain HTTP from the internet (the API key "
                "and prompts cross it unencrypted); prod refuses this"
            )
    elif lb.tls.certificate_id:
        out.append(
            f"load_balancer.tls.certificate_id {lb.tls.certificate_id!r} must exist in the cloud's certificate service in "
            f"{spec.region}; offline preview cannot check it (the shipped stacks carry example ids). Point "
            f"{lb.tls.domain} at the load balancer's address"
        )
    else:
        out.append(
            f"load_balancer.tls: the PEM pair comes from secret config {lb.tls.certificate_config} / "
            f"{lb.tls.private_key_config}; offline preview cannot decrypt secret config, so the certificate is opaque here "
            "and its expiry is not checked (pulumi up uploads it)"
        )
    gaps = contract.rules_module(spec.cloud).GAPS
    for key, text in gaps.items():
        if key in ("redirect", "tls_policy") and lb.tls is None:
            continue
        if key == "redirect" and not lb.tls.redirect_http:
            continue
        if key in ("protection", "instance_protection") and spec.environment != "prod":
            continue
        if key == "disk_encryption" and not spec.disks.encrypted:
            continue
        out.append(f"{spec.cloud} provider gap ({key}): {text}")
    return out
