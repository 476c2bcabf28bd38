"""Preview notes for the endpoint's TLS and the hardening the pinned providers cannot declare (docs/tls.md)."""

from __future__ import annotations

from datetime import datetime, timedelta

from gpufleet import contract
from gpufleet.inputs import kind
from gpufleet.stacks.loader import is_secret

EXPIRY_WARN_DAYS = 30  # preview warns when a PEM certificate it can read expires within this many days


def certificate_expiry(pem: str) -> datetime | None:
    """notAfter of the first certificate in a PEM text, or None when it is not a readable certificate."""
    # deferred: cryptography (~14 ms on the preview): only a given certificate is read with it
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificate(pem.encode()).not_valid_after_utc
    except ValueError:
        return None


# What the program reads offline for a TLS config key the stack file does not hold (pem_notes warns about it).
NOT_SET = "(not set in the stack file)"


def offline_config(spec, config: dict) -> dict:
    """The config the program runs with offline: a PEM key named by load_balancer.tls that the stack file does not
    hold (set later with `pulumi config set --secret`, or given by a Pulumi ESC environment) reads as NOT_SET, so
    that preview shows the program and warns (pem_notes) instead of failing on a missing config value."""
    tls = spec.load_balancer.tls
    if tls is None or tls.certificate_config is None:
        return config
    missing = {k: NOT_SET for k in (tls.certificate_config, tls.private_key_config) if k is not None and k not in config}
    return {**config, **missing} if missing else config


def pem_notes(spec, config: dict, now: datetime) -> list[str]:
    """The certificate's expiry when the stack file holds it readable (a certificate is public; plain config is fine),
    else why it is not checked. Secret config (`secure:`) cannot be decrypted offline: opaque."""
    tls = spec.load_balancer.tls
    if tls is None or tls.certificate_config is None:
        return []
    unset = [
        f"WARNING load_balancer.tls.{field}: {key} is not set in the stack file; "
        f'`pulumi config set --secret {key} -- "$(cat {pem})"` before pulumi up'
        for field, key, pem in (
            ("certificate_config", tls.certificate_config, "fullchain.pem"),
            ("private_key_config", tls.private_key_config, "privkey.pem"),
        )
        if key is not None and config.get(key) is None
    ]
    return unset + _certificate_notes(tls.certificate_config, config.get(tls.certificate_config), now)


def _certificate_notes(key: str, value, now: datetime) -> list[str]:
    if value is None:
        return []  # pem_notes says it is not set
    if not isinstance(value, str):
        return [f"{key} is secret config: opaque offline, its expiry is not checked"]
    expiry = certificate_expiry(value)
    if expiry is None:
        return [f"WARNING {key} is not a PEM certificate"]
    left = expiry - now
    if left <= timedelta(days=EXPIRY_WARN_DAYS):
        return [f"WARNING the certificate in {key} expires {expiry:%Y-%m-%d} (in {left.days} days): renew it"]
    return [f"the certificate in {key} expires {expiry:%Y-%m-%d}"]


def config_problems(spec, config: dict, file: str) -> list[tuple[str, str]]:
    """A PEM config value that is neither text nor Pulumi's secret form (`{secure: v1:...}`) is refused: `5` or
    `{secure: [1]}` was taken as secret config, opaque offline. (A private key held as plain text is refused by the
    loader, on every command that reads the stack file: stacks/loader.plaintext_secret_problems.)"""
    tls = spec.load_balancer.tls
    if tls is None:
        return []
    out = []
    for field, key, pem in (
        ("certificate_config", tls.certificate_config, "fullchain.pem"),
        ("private_key_config", tls.private_key_config, "privkey.pem"),
    ):
        value = config.get(key) if key is not None else None
        if value is None or isinstance(value, str) or is_secret(value):
            continue
        out.append(
            (
                f"fleet.load_balancer.tls.{field}",
                f"{key} in {file} is {_shape(value)}, neither PEM text nor Pulumi secret config ({{secure: v1:...}}); "
                f'set it with `pulumi config set --secret {key} -- "$(cat {pem})"`',
            )
        )
    return out


def _shape(value) -> str:
    if isinstance(value, dict) and "secure" in value:
        return "a secure: mapping that is not one non-empty ciphertext"
    return kind(value)


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
