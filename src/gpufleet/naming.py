"""The names a stack gives its cloud resources, unique in the scope each vendor documents (account, region, VPC,
scaling group): one account holds many stacks (two regions of one environment, two fleets of one environment in one
region) only if every account- or region-wide name differs between them.

Pulumi's logical names (the URNs, `fleet.prefix` + the component's suffix, e.g. `llm-prod-asg-group`) stay as they
were: they are unique within a stack and changing them would make `pulumi up` delete and create every resource. The
physical names the clouds see (role_name, scaling_group_name, ...) take the stack's *base* instead of the prefix:

    base = <fleet name>-<region>-<environment>      e.g. llm-cn-hangzhou-prod, qwen-ap-guangzhou-prod

at most BASE_MAX characters (longer: cut and ended with a digest of the whole, so it stays unique and stable), so
that base + the longest suffix the components add fits the tightest documented length limit (Tencent AS group
names: 55 bytes). Each cloud's name scopes and limits are data (components/<cloud>/name_scopes.yaml, quoted from
the vendor's API reference); gpufleet/namescope.py checks every name against them, one stack and all stacks of a
cloud together (`gpufleet check`).

A stack deployed before this change keeps its live names with `fleet.name_base: <name>-<env>` (the old prefix):
RAM/CAM role and policy names cannot be renamed in place (the provider replaces them), see docs/first-hour.md.
"""

from __future__ import annotations

import hashlib

from msgspec import Struct

BASE_MAX = 32
DIGEST = 6  # hex digits of sha256 ending a cut base


def fit(text: str, limit: int) -> str:
    """`text`, or when longer than `limit` its head and a digest of the whole (deterministic, `limit` long)."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:DIGEST]
    return f"{text[: limit - DIGEST - 1].rstrip('-')}-{digest}"


def base(spec) -> str:
    """The base of every physical name of the stack (spec.name_base when the stack sets it)."""
    if getattr(spec, "name_base", None):
        return spec.name_base
    return fit(f"{spec.name}-{spec.region}-{spec.environment}", BASE_MAX)


def legacy_base(spec) -> str:
    """The base names had before they were made account-unique: the logical prefix <name>-<environment>."""
    return f"{spec.name}-{spec.environment}"


def group_prefix(spec) -> str:
    """The logical prefix of a serving group's resources: <name>-<label>-<environment> with fleet.label, else the
    fleet's prefix <name>-<environment> (issue 31)."""
    label = getattr(spec, "label", None)
    return f"{spec.name}-{label}-{spec.environment}" if label else f"{spec.name}-{spec.environment}"


def group_base(spec) -> str:
    """The base of a serving group's physical names: the stack's base, or with fleet.label (issue 31) the base with the
    label after the fleet name, <name>-<label>-<region>-<environment> (name_base: <name_base>-<label>), at most
    BASE_MAX long like the base. A rollout's candidate group takes its label, so that after `rollout finish` the same
    group is the fleet's under the same names."""
    label = getattr(spec, "label", None)
    if not label:
        return base(spec)
    if getattr(spec, "name_base", None):
        return fit(f"{spec.name_base}-{label}", BASE_MAX)
    return fit(f"{spec.name}-{label}-{spec.region}-{spec.environment}", BASE_MAX)


class Names(Struct, frozen=True):
    """The physical names of one serving group's resources (`physical` without the Fleet): what a component's Args
    carry so the component need not see the spec. Called with a logical name, gives the cloud-side name."""

    prefix: str  # the fleet's logical prefix <name>-<environment>
    group_prefix: str  # the serving group's logical prefix (the prefix without fleet.label)
    base: str  # base(spec)
    group_base: str  # group_base(spec)

    def __call__(self, logical: str) -> str:
        group = self.group_prefix
        if group != self.prefix and (logical == group or logical.startswith(group + "-")):
            return self.group_base + logical[len(group) :]
        prefix = self.prefix
        if logical != prefix and not logical.startswith(prefix + "-"):
            raise ValueError(f"{logical!r} does not start with the fleet prefix {prefix!r}")
        return self.base + logical[len(prefix) :]


def names(fleet) -> Names:
    """The Names of a fleet (or of one of its serving groups: a rollout's candidate)."""
    return Names(
        prefix=fleet.prefix,
        group_prefix=getattr(fleet, "group_prefix", fleet.prefix),
        base=base(fleet.spec),
        group_base=group_base(fleet.spec),
    )


def physical(fleet, logical: str) -> str:
    """The cloud-side name of a resource whose logical name is `logical` (which starts with the fleet's prefix, or
    with its serving group's prefix <name>-<label>-<environment> when the fleet has a label)."""
    return names(fleet)(logical)
