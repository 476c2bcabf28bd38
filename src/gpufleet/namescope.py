"""Name scopes: every cloud-side name a stack declares, checked against the scope and length its vendor documents.

Each cloud's data (components/<cloud>/name_scopes.yaml, next to its profile module) says, per (resource type, input),
where the name must be unique (account, region, VPC, scaling group, or nowhere stated) and its maximum length, with
the API reference text it comes from. Two checks run on the recorded inventories (gpufleet.preview.Inventory):

- per stack (`stack_problems`, also the policy pack's stack policy): a name longer than its limit; two resources of
  the stack with one name in one scope; a name-like input of a listed type that the data does not know.
- across the stacks of one cloud (`clashes`, `gpufleet check`): an account-wide name used by two stacks, or a
  region-wide name used by two stacks of one region. All stacks of a cloud are taken to share one account, the case
  that breaks: two stacks in different accounts never clash, which the check cannot see and need not.

VPC- and group-scoped names never clash across stacks: each stack creates its own VPC and groups.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs, registry

SCOPES = ("account", "region", "vpc", "group", "none")
DATA = "name_scopes.yaml"


class Scope(Struct, frozen=True):
    type: str
    input: str
    scope: str
    max: int | None
    api: str
    text: str
    within: str | None = None
    ref: str | None = None  # "<type> <input>": this input repeats another entry's name


class Name(Struct, frozen=True):
    stack: str
    cloud: str
    region: str
    resource: str  # the logical (Pulumi) name
    rule: Scope
    value: str
    within: str | None = None  # the VPC / group id a vpc / group scope is inside

    def key(self) -> tuple:
        """What must differ between two names for both to be legal."""
        r = self.rule
        if r.scope == "account":
            return (self.cloud, r.type, r.input)
        if r.scope == "region":
            return (self.cloud, self.region, r.type, r.input)
        return (self.stack, r.type, r.input, self.within)  # vpc / group: each stack's own

    def where(self) -> str:
        r = self.rule
        if r.scope == "account":
            return f"the {self.cloud} account"
        if r.scope == "region":
            return f"region {self.region} of the {self.cloud} account"
        return f"its {r.scope} ({r.within} {self.within})"


def data_file(cloud: str) -> Path:
    return Path(str(registry.module(cloud, "profile").__file__)).parent / DATA


@cache
def load(cloud: str) -> dict[tuple[str, str], Scope] | None:
    """The cloud's name scopes; None when its package has no name_scopes.yaml (its names are not checked)."""
    path = data_file(cloud)
    if not path.exists():
        return None
    doc = inputs.load_mapping(path, f"components/{cloud}/{DATA}")
    out = {}
    for row in doc["names"]:
        scope = Scope(
            type=row["type"],
            input=row["input"],
            scope=row.get("scope", "none"),
            max=row.get("max"),
            api=row.get("api", ""),
            text=row.get("text", ""),
            within=row.get("within"),
            ref=row.get("ref"),
        )
        if scope.scope not in SCOPES:
            raise ValueError(f"{path.name}: {scope.type} {scope.input}: scope {scope.scope!r} is not one of {SCOPES}")
        out[(scope.type, scope.input)] = scope
    return out


def spec_versions(cloud: str) -> dict[str, str]:
    if not data_file(cloud).exists():
        return {}
    return dict(inputs.load_mapping(data_file(cloud), f"components/{cloud}/{DATA}").get("spec_versions") or {})


def is_name_input(key: str) -> bool:
    """The inputs that carry a cloud-side name (metricName, namespace and the like name other things)."""
    return key in ("name", "role") or (key.endswith("Name") and key not in ("metricName", "username", "tagName"))


def names_of(resources: list[dict], stack: str, cloud: str, region: str) -> tuple[list[Name], list[str]]:
    """(the names the resources declare, with their rule; name-like inputs of the cloud's types the data lacks)."""
    rules = load(cloud)
    out: list[Name] = []
    unknown: list[str] = []
    if rules is None:
        return out, unknown
    for r in resources:
        if not r["type"].startswith(f"{cloud}:") or not r.get("custom", True):
            continue
        for key, value in r["inputs"].items():
            if not isinstance(value, str) or not is_name_input(key):
                continue
            rule = rules.get((r["type"], key))
            if rule is None:
                unknown.append(f"{r['type']} {key} ({r['name']})")
                continue
            if rule.ref is not None:
                continue
            within = r["inputs"].get(rule.within) if rule.within else None
            out.append(Name(stack, cloud, region, r["name"], rule, value, str(within) if within is not None else None))
    return out, unknown


def _dupes(names: list[Name]) -> dict[tuple, list[Name]]:
    by: dict[tuple, list[Name]] = {}
    for n in names:
        if n.rule.scope != "none":
            by.setdefault((*n.key(), n.value), []).append(n)
    return {k: v for k, v in by.items() if len(v) > 1}


def stack_problems(names: list[Name], unknown: tuple[str, ...] | list[str] = ()) -> list[str]:
    """What one stack gets wrong by itself: lengths, duplicates within the stack, names the data does not know."""
    out = []
    for n in names:
        if n.rule.max is not None and len(n.value.encode()) > n.rule.max:
            out.append(
                f"{n.rule.api}: {n.value!r} is {len(n.value.encode())} long, more than the {n.rule.max} the API allows "
                f"({n.rule.type} {n.resource})"
            )
    for group in _dupes(names).values():
        if len({n.stack for n in group}) == 1:
            out.append(
                f"{group[0].rule.api}: {group[0].value!r} is given to {', '.join(n.resource for n in group)}; it must be "
                f"unique in {group[0].where()}"
            )
    out += [f"{u}: a name the vendor scopes are not known for (add it to components/<cloud>/{DATA})" for u in unknown]
    return out


class Clash(Struct, frozen=True):
    value: str
    rule: Scope
    scope: str  # where it must be unique, for people
    stacks: tuple[str, ...]

    def message(self) -> str:
        r = self.rule
        return (
            f"{r.api} {self.value!r} is declared by stacks {' and '.join(self.stacks)}; it must be unique in {self.scope} "
            f"(components/{self.rule.type.split(':')[0]}/{DATA})"
        )


def clashes(names: list[Name]) -> list[Clash]:
    """Names two stacks of one cloud give in one account- or region-wide scope."""
    out = []
    for group in _dupes(names).values():
        stacks = tuple(sorted({n.stack for n in group}))
        if len(stacks) > 1:
            out.append(Clash(group[0].value, group[0].rule, group[0].where(), stacks))
    return sorted(out, key=lambda c: (c.stacks, c.rule.type, c.value))
