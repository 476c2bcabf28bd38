"""The provider contract: what each cloud's provider accepts, as data, checked offline.

Pulumi's mock engine accepts any value. The rules here are what the providers' own schemas and documents
say (each cloud's `components/<cloud>/rules.py`, every rule with its citation), checked on the recorded
inventory of a run (`check_inventory`) and, where a rule's value is a spec field as written, on the spec
before anything runs (`spec_problems`). The policy pack in policy/ runs the same rules on a real deploy.

A rule names a provider type token and argument (snake_case, as in the provider's docs; `a.b` walks into
each element of a list or object), a kind, the source, and the spec field that leads to the value
(None: the program chose it, so a broken rule is a program defect).
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from msgspec import Struct, field

from gpufleet import cron, registry

ABSENT = "<absent>"  # what a `required` rule's of_spec returns when the spec leaves the value out
PULUMI_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # how the engine shows a value not known during a real preview


class Rule(Struct, frozen=True):
    """One provider rule on one argument of one resource type (contract rule files), with its source."""

    type: str
    arg: str
    kind: str  # one_of | between | number_string | pattern | length | count | cidr | ip | requires | required | conflicts | deprecated | date
    source: str
    spec: str | None = None
    values: tuple = ()
    low: float | None = None
    high: float | None = None
    regex: str | None = None
    others: tuple[str, ...] = ()
    when: dict = field(default_factory=dict)  # only when these arguments have these values
    date_format: str | None = None  # strptime format the provider documents
    max_days_ahead: int | None = None  # date at most this many days after the run
    future: bool = False  # date after the run
    of_spec: Callable | None = None  # the spec value the provider receives as is
    note: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.arg.split(".")[0])


class Violation(Struct, frozen=True):
    """A declared value that breaks a Rule."""

    rule: Rule
    resource: str
    value: Any
    message: str

    @property
    def spec_field(self) -> str:
        return self.rule.spec or "(program)"

    def __str__(self) -> str:
        return f"{self.rule.type} {self.resource}: {self.rule.arg}={self.value!r}: {self.message} (source: {self.rule.source})"


@cache  # a few hundred rule argument names, asked for every resource of every preview
def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _values(inputs: dict, path: str) -> list[Any]:
    """Every value at a dotted snake_case path (lists are walked); [] when absent."""
    found: list[Any] = [inputs]
    for part in path.split("."):
        nxt = []
        for item in found:
            items = item if isinstance(item, list) else [item]
            for obj in items:
                if isinstance(obj, dict):
                    for key in (camel(part), part):
                        if key in obj and obj[key] is not None:
                            nxt.append(obj[key])
                            break
        found = nxt
    return found


def _unknown(value: Any) -> bool:
    """Values the mock engine cannot know (ids, computed outputs, secrets): nothing to check."""
    if value is not None and not isinstance(value, (str, int, float, bool, list, dict)):
        return True  # e.g. a secret wrapper in a real policy run
    return isinstance(value, str) and (value.startswith("<") or value in ("[secret]", PULUMI_UNKNOWN))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _show(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def check_value(rule: Rule, value: Any, now: datetime) -> str | None:
    """Why `value` breaks `rule`, or None."""
    if _unknown(value):
        return None
    if isinstance(value, list) and rule.kind in ("one_of", "between", "pattern", "length", "cidr", "ip"):
        for v in value:
            problem = check_value(rule, v, now)
            if problem:
                return problem
        return None
    k = rule.kind
    if k == "pattern" and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(_show(value))
    if k == "one_of":
        allowed = [_show(v) for v in rule.values]
        if _show(value) not in allowed and str(value) not in [str(a) for a in allowed]:
            return f"{_show(value)!r} is not one of {', '.join(map(repr, allowed))}"
    elif k in ("between", "number_string"):
        n = _number(value)
        if n is None or (k == "between" and isinstance(value, str)):
            return f"{value!r} is not a number"
        if (rule.low is not None and n < rule.low) or (rule.high is not None and n > rule.high):
            return f"{_show(n)} is outside {_show(rule.low)}-{_show(rule.high)}"
    elif k == "pattern":
        if not isinstance(value, str) or not re.fullmatch(rule.regex or "", value):
            return f"{value!r} does not match {rule.note or rule.regex}"
    elif k == "length":
        if (rule.low is not None and len(value) < rule.low) or (rule.high is not None and len(value) > rule.high):
            return f"length {len(value)} is outside {_show(rule.low)}-{_show(rule.high)}"
    elif k == "count":  # the items of a list or the keys of a map (tags), not each item
        if not isinstance(value, (list, dict)):
            return f"{value!r} is not a list or map"
        if (rule.low is not None and len(value) < rule.low) or (rule.high is not None and len(value) > rule.high):
            return f"{len(value)} items is outside {_show(rule.low or 0)}-{_show(rule.high)}"
    elif k in ("cidr", "ip"):
        try:
            ipaddress.ip_network(value, strict=True) if k == "cidr" else ipaddress.ip_address(value)
        except (TypeError, ValueError):
            return f"{value!r} is not {'a CIDR network address' if k == 'cidr' else 'an IP address'}"
    elif k == "date":
        try:
            when = datetime.strptime(value, rule.date_format or "")
        except (TypeError, ValueError):
            return f"{value!r} is not in the documented format {rule.note or rule.date_format}"
        if when.tzinfo is None:
            when = when.replace(tzinfo=now.tzinfo)
        if rule.future and when <= now:
            return f"{value} is not after the time of the run ({now:%Y-%m-%dT%H:%MZ})"
        if rule.max_days_ahead is not None and when > now + timedelta(days=rule.max_days_ahead):
            return f"{value} is more than {rule.max_days_ahead} days after the time of the run ({now:%Y-%m-%d})"
    return None


def _applies(rule: Rule, inputs: dict) -> bool:
    for arg, want in rule.when.items():
        got = _values(inputs, arg)
        wanted = want if isinstance(want, tuple) else (want,)
        if not got or _show(got[0]) not in [_show(w) for w in wanted]:
            return False
    return True


def check_resource(rules: Iterable[Rule], resource: dict, now: datetime) -> list[Violation]:
    out = []
    inputs = resource.get("inputs", {})
    for rule in rules:
        if rule.type != resource["type"] or not _applies(rule, inputs):
            continue
        present = _values(inputs, rule.arg)
        if rule.kind == "requires":
            if present:
                missing = [o for o in rule.others if not _values(inputs, o)]
                if missing:
                    out.append(Violation(rule, resource["name"], present[0], f"needs {', '.join(missing)} set with it"))
        elif rule.kind == "required":
            if not present:
                out.append(Violation(rule, resource["name"], None, "is required"))
        elif rule.kind == "conflicts":
            if present:
                clash = [o for o in rule.others if _values(inputs, o)]
                if clash:
                    out.append(Violation(rule, resource["name"], present[0], f"cannot be set together with {', '.join(clash)}"))
        elif rule.kind == "deprecated":
            if present:
                out.append(Violation(rule, resource["name"], present[0], f"is deprecated: {rule.note}"))
        else:
            for value in present:
                problem = check_value(rule, value, now)
                if problem:
                    out.append(Violation(rule, resource["name"], _show(value), problem))
    return out


def rules_module(cloud: str):
    return registry.module(cloud, "rules")


def rules_for(cloud: str) -> tuple[Rule, ...]:
    return tuple(rules_module(cloud).RULES)


def cloud_of(resources: Iterable[dict]) -> str | None:
    for r in resources:
        if r["type"].startswith("pulumi:providers:"):
            return r["type"].split(":")[-1]
    return None


def check_inventory(resources: list[dict], now: datetime, cloud: str | None = None) -> list[Violation]:
    """Every rule of the inventory's cloud broken by a recorded resource."""
    cloud = cloud or cloud_of(resources)
    if cloud is None:
        return []
    by_type: dict[str, list[Rule]] = {}
    for rule in rules_for(cloud):
        by_type.setdefault(rule.type, []).append(rule)
    return [v for r in resources if r.get("custom", True) for v in check_resource(by_type.get(r["type"], ()), r, now)]


def spec_problems(spec) -> list[tuple[str, str]]:
    """Spec values the provider receives as written, checked against the provider's limits before the program runs."""
    out = []
    for rule in rules_for(spec.cloud):
        if rule.of_spec is None or not rule.spec:
            continue
        value = rule.of_spec(spec)
        if value is None:
            continue
        if rule.kind == "required":
            problem = "is required" if value == ABSENT else None
        else:
            problem = check_value(rule, value, datetime.now().astimezone())
        if problem:
            out.append((rule.spec, f"{problem}: {spec.cloud} refuses it ({rule.type} {rule.arg}; {rule.source})"))
    return out + tag_problems(spec)


def name_problems(cloud: str, kind: str, value: str) -> list[str]:
    """Why `value` is not a legal `kind` on `cloud` (kinds: tag_key, tag_value, secret_name, bucket_name, user_data),
    each with its citation. user_data is the text as written; the check is on its Base64 encoding, as sent."""

    if kind == "user_data":
        value = base64.b64encode(value.encode()).decode()
    out = []
    for rule in rules_module(cloud).NAMES[kind]:
        problem = check_value(rule, value, datetime.now().astimezone())
        if problem:
            out.append(
                f"{problem} ({rule.note}; {rule.source})"
                if rule.note and rule.kind != "pattern"
                else f"{problem} ({rule.source})"
            )
    return out


def tag_problems(spec) -> list[tuple[str, str]]:
    """The spec's tags (and the fleet's own) against the cloud's tag naming rules."""
    out = []
    for key, value in {**spec.stack_tags}.items():
        where = f"fleet.tags.{key}"
        out += [(where, f"tag key {key!r}: {p}") for p in name_problems(spec.cloud, "tag_key", key)]
        out += [(where, f"tag value {value!r}: {p}") for p in name_problems(spec.cloud, "tag_value", value)]
    return out


def problems(violations: Iterable[Violation]) -> list[tuple[str, str]]:
    """Violations as (spec field, message) for a UserError."""
    return [(v.spec_field, str(v)) for v in violations]


WARN_DAYS = 30  # preview warns this long before a schedule window ends


def schedule_notes(spec, now: datetime) -> list[str]:
    """Each schedule's next firing in the provider's cron zone, and in UTC when that zone is not UTC (Tencent's UTC+8;
    Alibaba's `... UTC = ... UTC` said one time twice), and a warning 30 days before its window ends."""

    hours = rules_module(spec.cloud).CRON_ZONE_HOURS
    zone = cron.zone(hours)
    out = []
    for s in spec.autoscaling.schedules:
        w = cron.window(s.cron, spec.autoscaling, now)
        nxt = cron.next_firing(s.cron, now)
        out.append(
            f"schedule {s.name} ({s.cron!r} UTC): next firing {nxt.astimezone(zone):%Y-%m-%d %H:%M} {zone.tzname(None)}"
            + (f" = {nxt:%Y-%m-%d %H:%M} UTC" if hours else "")
            + f"; window ends {w.end:%Y-%m-%d}"
            + (
                ""
                if w.stored
                else " (anchored at the run's date and kept after creation; store autoscaling.schedule_window_start)"
            )
        )
        if w.end - now <= timedelta(days=WARN_DAYS):
            out.append(
                f"WARNING schedule {s.name}: its window ends {w.end:%Y-%m-%d} (in {(w.end - now).days} days); "
                "renew: set autoscaling.schedule_window_start to today and run `pulumi up`"
            )
    return out
