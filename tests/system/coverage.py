"""Spec coverage: every argument the program sends, mapped to the vendor API member it becomes, checked against the
limits the vendor's own API reference states (speclib) and the provider rules that encode them.

`report(cloud, sent)` returns the problems and the counts; `sent_args(inventories)` records what the program sends.
The map is data: `components/<cloud>/api_map.yaml` (found next to the cloud's rules module).

Run as a script to rewrite the counts block in docs/provider-contract.md:
`.venv/bin/python tests/system/coverage.py --write`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from msgspec import Struct, field

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import speclib  # type: ignore[no-redef]
else:
    from . import speclib

from gpufleet import contract

SPEC_CITE = re.compile(r"(?P<package>tccli|alibabacloud[-_]\w+)==(?P<version>[\d.]+) (?P<ref>\S+)")


@cache
def api_map(cloud: str) -> dict:
    return yaml.safe_load((Path(contract.rules_module(cloud).__file__).parent / "api_map.yaml").read_text())


class Entry(Struct, frozen=True):
    type: str
    arg: str
    ref: str | None  # <base>/<Action>:<Member path>, None when `none`
    scope: str | None = None
    map: tuple[str, ...] = ()
    waive: dict = field(default_factory=dict)
    none: str | None = None
    names: tuple[str, ...] = ()  # the cloud's NAMES kinds (rules.py) that check each map part (e.g. tag_key, tag_value)


def spec_packages(amap: dict) -> dict[str, str]:
    """{package: version} an api_map.yaml reads."""
    spec = amap["spec"]
    found = spec.get("packages") or {spec["package"]: spec["version"]}
    return {p.replace("_", "-"): str(v) for p, v in found.items()}


def entries(cloud: str, amap: dict | None = None) -> dict[tuple[str, str], Entry]:
    amap = amap or api_map(cloud)
    out = {}
    for type_, res in amap["resources"].items():
        base, _, action = res["action"].rpartition("/")
        for arg, spec in res["args"].items():
            spec = spec if isinstance(spec, dict) else {"member": spec}
            if "none" in spec:
                out[(type_, arg)] = Entry(type_, arg, None, none=spec["none"])
                continue
            member = spec["member"]
            ref = f"{base}/{member}" if ":" in member else f"{base}/{action}:{member}"
            parts = spec.get("map", ())
            parts = ("",) if parts is True else tuple(parts)  # true: the map is sent as one field (e.g. a JSON string)
            names = tuple(spec.get("names", ()))
            out[(type_, arg)] = Entry(type_, arg, ref, spec.get("scope"), parts, spec.get("waive", {}), names=names)
    return out


def _leaves(value: Any, path: str) -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{contract.snake(k)}")
        if not value:
            yield path
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, path)
    else:
        yield path


def sent_args(inventories: Iterable[tuple[str, str, dict]]) -> dict[str, dict[str, set[str]]]:
    """{cloud: {type: {argument paths}}}: each top-level argument and, inside blocks, each field (not map keys)."""
    out: dict[str, dict[str, set[str]]] = {}
    for _, cloud, inv in inventories:
        for r in inv["resources"]:
            if not r.get("custom", True) or r["type"].startswith("pulumi:"):
                continue
            paths = out.setdefault(cloud, {}).setdefault(r["type"], set())
            for arg, value in r["inputs"].items():
                top = contract.snake(arg)
                paths.add(top)
                if isinstance(value, (dict, list)):
                    paths.update(p for p in _leaves(value, top) if p != top)
    return out


def sent_values(inventories: Iterable[tuple[str, str, dict]], cloud: str, type_: str, arg: str) -> list[Any]:
    out = []
    for _, c, inv in inventories:
        if c != cloud:
            continue
        for r in inv["resources"]:
            if r["type"] == type_:
                out += contract._values(r["inputs"], arg)
    return [v for x in out for v in (x if isinstance(x, list) else [x])]


# --- does a rule encode a stated limit


def _within(low, high, lim: speclib.Limit) -> bool:
    lo = float("-inf") if lim.low is None else lim.low
    hi = float("inf") if lim.high is None else lim.high
    return low is not None and high is not None and lo <= low and high <= hi


def _norm(v: Any) -> str:
    return str(int(v) if isinstance(v, float) and v.is_integer() else v).lower()


def encodes(rule: contract.Rule, lim: speclib.Limit) -> bool:
    """The rule refuses everything the stated limit refuses (for values the rule's kind can see)."""
    k = rule.kind
    if lim.kind == "range":
        if k in ("between", "number_string"):
            return _within(rule.low, rule.high, lim)
        if k == "one_of":
            nums = [contract._number(v) for v in rule.values]
            return all(n is not None for n in nums) and all(_within(n, n, lim) for n in nums)
        return False
    if lim.kind == "enum":
        return k == "one_of" and {_norm(v) for v in rule.values} <= {_norm(v) for v in lim.values}
    if lim.kind == "length":
        if k == "length":
            return _within(rule.low if rule.low is not None else 0, rule.high, lim)
        if k == "pattern" and lim.high is not None:
            return re.fullmatch(rule.regex or "", "a" * (int(lim.high) + 1)) is None
        return False
    if lim.kind == "count":
        return k == "count" and _within(rule.low if rule.low is not None else 0, rule.high, lim)
    if lim.kind == "format":
        return k in ("pattern", "date", "cidr", "ip", "number_string")
    if lim.kind == "exclusion":
        return k in ("conflicts", "requires")
    if lim.kind == "billing":
        return bool(rule.when) or k in ("requires", "required")
    return False


def stated_in(rule: contract.Rule, lim: speclib.Limit) -> bool:
    """The rule's own limit is the stated one (what a rule citing the spec must still find there)."""
    if lim.kind in ("range", "length") and rule.kind in ("between", "number_string", "length"):
        return (rule.low, rule.high) == (lim.low if lim.low is not None else rule.low, lim.high)
    if lim.kind == "count" and rule.kind == "count":
        return rule.high == lim.high
    if lim.kind == "enum" and rule.kind == "one_of":
        return {_norm(v) for v in rule.values} <= {_norm(v) for v in lim.values}
    if lim.kind == "range" and rule.kind == "one_of":
        return encodes(rule, lim)
    return lim.kind in ("format", "exclusion", "billing") and encodes(rule, lim)


class Report(Struct):
    problems: list[str] = field(default_factory=list)
    sent: int = 0  # arguments sent that become an API member
    no_member: int = 0  # arguments the provider keeps (no API member)
    members: set = field(default_factory=set)
    stated: set = field(default_factory=set)  # members whose document states a limit
    encoded: set = field(default_factory=set)  # every stated limit encoded by a rule or a declared scope
    waived: set = field(default_factory=set)  # at least one stated limit waived, none left open
    limits: int = 0
    limits_encoded: int = 0
    limits_waived: int = 0


def member_refs(entry: Entry) -> list[str]:
    if entry.ref is None:
        return []
    if entry.map:
        return [f"{entry.ref}.{part}" if part else entry.ref for part in entry.map]
    return [entry.ref]


def report(
    cloud: str, sent: dict[str, set[str]], rules: Iterable[contract.Rule] | None = None, amap: dict | None = None
) -> Report:
    amap = amap or api_map(cloud)
    reader = amap["spec"]["reader"]
    rules = tuple(contract.rules_module(cloud).RULES if rules is None else rules)
    mapped = entries(cloud, amap)
    rep = Report()
    for package, wanted in spec_packages(amap).items():
        pinned = speclib.version(package)
        if pinned != wanted:
            rep.problems.append(f"{cloud}: api_map.yaml reads {package} {wanted}, installed {pinned}")
    maps = {key for key, e in mapped.items() if e.map}
    for type_, paths in sorted(sent.items()):
        for path in sorted(paths):
            if any(path.startswith(f"{a}.") for t, a in maps if t == type_):
                continue  # a map's keys are data, not arguments
            if (type_, path) not in mapped:
                rep.problems.append(f"{type_} {path}: sent but not mapped to an API member (components/{cloud}/api_map.yaml)")
    by_arg: dict[tuple[str, str], list[contract.Rule]] = {}
    for rule in rules:
        by_arg.setdefault((rule.type, rule.arg), []).append(rule)
    for key, entry in sorted(mapped.items()):
        if key[1] not in sent.get(key[0], set()):
            rep.problems.append(f"{key[0]} {key[1]}: mapped but not sent (remove it from components/{cloud}/api_map.yaml)")
            continue
        if entry.none:
            rep.no_member += 1
            continue
        rep.sent += 1
        names = contract.rules_module(cloud).NAMES
        if entry.ref and len(entry.map) == 2:  # a map sent as a list of {Key, Value}: the list's own text may cap its length
            try:
                whole = speclib.member(reader, entry.ref)
            except LookupError as err:
                rep.problems.append(f"{key[0]} {key[1]}: {err}")
                continue
            for lim in speclib.extract(whole.document, whole.type):
                if lim.kind != "count":
                    continue
                rep.limits += 1
                if any(encodes(r, lim) for r in by_arg.get(key, [])):
                    rep.limits_encoded += 1
                elif "count" in entry.waive:
                    rep.limits_waived += 1
                else:
                    rep.problems.append(
                        f"{key[0]} {key[1]} -> {entry.ref}: the spec states {lim}; no rule encodes it (nor a waiver)"
                    )
        for i, ref in enumerate(member_refs(entry)):
            kinds = entry.names if len(entry.map) < 2 else entry.names[i : i + 1]
            pool = by_arg.get(key, []) + [r for k in kinds for r in names.get(k, ())]
            try:
                member = speclib.member(reader, ref)
            except LookupError as err:
                rep.problems.append(f"{key[0]} {key[1]}: {err}")
                continue
            rep.members.add(ref)
            limits = speclib.extract(member.document, member.type)
            if not limits:
                continue
            rep.stated.add(ref)
            open_, waived = [], []
            for lim in limits:
                rep.limits += 1
                if lim.kind == "unique":
                    if entry.scope == lim.scope:
                        rep.limits_encoded += 1
                        continue
                    if "unique" in entry.waive:
                        waived.append(lim)
                        continue
                    open_.append(f"{lim} (declare `scope: {lim.scope}`; declared: {entry.scope})")
                    continue
                if any(encodes(r, lim) for r in pool):
                    rep.limits_encoded += 1
                elif lim.kind in entry.waive:
                    waived.append(lim)
                else:
                    open_.append(str(lim))
            rep.limits_waived += len(waived)
            for text in open_:
                rep.problems.append(f"{key[0]} {key[1]} -> {ref}: the spec states {text}; no rule encodes it (nor a waiver)")
            if not open_:
                (rep.waived if waived else rep.encoded).add(ref)
    for kind_waived in (e for e in mapped.values() if e.waive):
        for kind in kind_waived.waive:
            if kind not in speclib.KINDS:
                rep.problems.append(f"{kind_waived.type} {kind_waived.arg}: waiver of unknown kind {kind!r}")
    rep.problems += cited_problems(rules, reader)
    return rep


def cited_problems(rules: Iterable[contract.Rule], reader: str) -> list[str]:
    """A rule citing the pinned spec (`tccli==V <ref>`) whose limit is no longer stated there, or a stale version."""
    out = []
    for rule in rules:
        m = SPEC_CITE.search(rule.source)
        if not m:
            continue
        package = m["package"].split("/")[0].replace("_", "-") if m["package"] != "tccli" else "tccli"
        installed = speclib.version(package)
        if installed != m["version"]:
            out.append(f"{rule.type} {rule.arg}: cites {package}=={m['version']}, installed {installed}")
            continue
        try:
            member = speclib.member(reader, m["ref"])
        except LookupError as err:
            out.append(f"{rule.type} {rule.arg}: cited member: {err}")
            continue
        limits = speclib.extract(member.document, member.type)
        if rule.kind == "pattern" and speclib.charset(member.document):
            continue  # a character set the member states (A2-A4 of the rules review: read, not only the length)
        if not any(stated_in(rule, lim) for lim in limits):
            shown = "; ".join(map(str, limits)) or "no limit"
            out.append(
                f"{rule.type} {rule.arg}: cites {m['ref']} for its {rule.kind} limit, which the spec no longer states ({shown})"
            )
    return out


def value_problems(cloud: str, inventories, amap: dict | None = None) -> list[str]:
    """Recorded values outside every numeric range the member's document states (the spec read directly)."""
    amap = amap or api_map(cloud)
    out = []
    for key, entry in sorted(entries(cloud, amap).items()):
        if entry.ref is None or entry.map or "range" in entry.waive:
            continue
        try:
            member = speclib.member(amap["spec"]["reader"], entry.ref)
        except LookupError:
            continue
        ranges = [lim for lim in speclib.extract(member.document, member.type) if lim.kind == "range"]
        if not ranges:
            continue
        for value in sent_values(inventories, cloud, *key):
            n = contract._number(value)
            if n is None or contract._unknown(value):
                continue
            if not any(_within(n, n, lim) for lim in ranges):
                stated = ", ".join(f"{speclib._n(r.low)}-{speclib._n(r.high)}" for r in ranges)
                out.append(f"{key[0]} {key[1]}={contract._show(n)}: outside what {entry.ref} states ({stated})")
    return sorted(set(out))


# --- the counts block in docs/provider-contract.md

DOC = Path(__file__).resolve().parents[2] / "docs" / "provider-contract.md"
BEGIN, END = "<!-- spec-coverage:begin (tests/system/coverage.py --write) -->", "<!-- spec-coverage:end -->"


def counts_block(reports: dict[str, Report]) -> str:
    lines = [
        BEGIN,
        "| cloud | spec read (pinned) | arguments mapped | no API member | members with a stated limit | all encoded | waived | limits: stated / encoded / waived |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cloud, rep in sorted(reports.items()):
        spec = ", ".join(f"{p} {v}" for p, v in spec_packages(api_map(cloud)).items())
        lines.append(
            f"| {cloud} | {spec} | {rep.sent} | {rep.no_member} | {len(rep.stated)} "
            f"| {len(rep.encoded)} | {len(rep.waived)} | {rep.limits} / {rep.limits_encoded} / {rep.limits_waived} |"
        )
    lines.append(END)
    return "\n".join(lines)


def doc_block(text: str) -> str | None:
    m = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, re.S)
    return m.group(0) if m else None


def all_reports() -> dict[str, Report]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from contract import sweep

    invs = sweep.inventories() + shipped()
    sent = sent_args(invs)
    return {cloud: report(cloud, sent.get(cloud, {})) for cloud in sorted(sent) if _has_map(cloud)}


def _has_map(cloud: str) -> bool:
    return (Path(contract.rules_module(cloud).__file__).parent / "api_map.yaml").exists()


@cache
def shipped() -> tuple[tuple[str, str, dict], ...]:
    """(stack, cloud, inventory json) of every shipped stack as it is."""
    from gpufleet import preview, validation
    from gpufleet.stacks import loader

    root = Path(__file__).resolve().parents[2]
    out = []
    for stack in loader.stack_names(root):
        inv = preview.preview_stack(stack, root)
        out.append((stack, validation.load_fleet(stack, root, sizing=False).spec.cloud, inv.to_json()))
    return tuple(out) + rollouts()


@cache
def rollouts() -> tuple[tuple[str, str, dict], ...]:
    """(stack/step, cloud, inventory json) of the shipped rollout examples as shipped, at weight 0 (the candidate takes
    nothing), promoted (the current group at weight 0), finished (the label kept) and rolled back (the candidate at 0
    nodes); and with spot and monthly billing, as shipped and promoted."""
    import tempfile
    from datetime import UTC, datetime

    from gpufleet import preview, validation
    from gpufleet.stacks import loader
    from gpufleet.stacks.rollout import rollout_step_spec

    root = Path(__file__).resolve().parents[2]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((root / "examples").glob("Pulumi.*-rollout.yaml")):
            text = path.read_text()
            now = datetime(2026, 12, 1, tzinfo=UTC)
            variants: list[tuple[str, object, str]] = [
                (str(step), step, text) for step in ("as-shipped", 0, "promoted", "finished", "rolled_back")
            ]
            for billing, line in (
                ("spot", "billing: {model: spot, on_demand_base: 2}"),
                ("monthly", "billing: {model: monthly, period_months: 1}"),
            ):  # a spot canary's own on-demand base; a subscription fleet's pay-as-you-go canary, then its subscription
                other = text.replace("billing: {model: payg}", line)
                variants += [(f"{billing}-{step}", step, other) for step in ("as-shipped", "promoted")]
            for label, step, body in variants:
                body = body if step == "as-shipped" else rollout_step_spec(body, step, now)
                stack = f"{path.name[len('Pulumi.') : -len('.yaml')]}-{label}"
                file = Path(tmp) / f"Pulumi.{stack}.yaml"
                file.write_text(body)
                name = loader.use_stack_file(file)
                inv = preview.preview_stack(name, root)
                out.append((name, validation.load_fleet(name, root, sizing=False).spec.cloud, inv.to_json()))
    return tuple(out)


if __name__ == "__main__":
    import os

    os.environ.setdefault("GPUFLEET_NOW", "2026-12-01T00:00:00+00:00")
    reports = all_reports()
    for cloud, rep in reports.items():
        for p in rep.problems:
            print(f"{cloud}: {p}")
    block = counts_block(reports)
    if "--write" in sys.argv:
        text = DOC.read_text()
        old = doc_block(text)
        DOC.write_text(text.replace(old, block) if old else text.rstrip("\n") + "\n\n" + block + "\n")
    print(block)
