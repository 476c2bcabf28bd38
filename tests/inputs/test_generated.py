"""Property-based (Hypothesis): malformed stack specs, input files and command arguments, in-process.

Asserted for every generated case: no traceback (only UserError / exit 2 or success), the message names the
file or flag, and nothing on disk changed on a refusal. Under CI=true the run is derandomized with no deadline.
The total count is printed at the end of the session (tests/inputs/conftest.py)."""

from __future__ import annotations

import copy
import ipaddress
import os
import shutil
import unicodedata

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpufleet import inputs, registry
from gpufleet.errors import UserError
from gpufleet.stacks import loader

from .inputs_helpers import GENERATED, ROOT, run_cli, snapshot

CI = os.environ.get("CI") == "true"
COMMON = dict(
    deadline=None,
    derandomize=CI,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
STACK = "alicloud-cn-hangzhou-dev"
BASE = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text())

nasty_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["[/x]", "[bold]x", "a\nb", "x\n", "", " ", "../evil", ".", "\x00", "é", "1e999999999", "nan", "-1"]),
)
nasty = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        nasty_text,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(nasty_text, inner, max_size=3)),
    max_leaves=6,
)


def paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, (*prefix, i))


FLEET = BASE["config"]["gpufleet:fleet"]
FIELD_PATHS = [p for p in paths(FLEET) if p]


@st.composite
def mutated_fleet(draw):
    fleet = copy.deepcopy(FLEET)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(FIELD_PATHS))
        parent = fleet
        try:
            for part in path[:-1]:
                parent = parent[part]
            action = draw(st.sampled_from(["replace", "delete", "misspell"]))
            if action == "replace":
                parent[path[-1]] = draw(nasty)
            elif action == "delete" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif isinstance(parent, dict) and isinstance(path[-1], str):
                parent[path[-1] + draw(st.sampled_from(["x", "_", "s"]))] = parent.pop(path[-1])
        except (KeyError, IndexError, TypeError):
            pass
    return fleet


def _dump(fleet) -> str:
    return yaml.safe_dump({**BASE, "config": {**BASE["config"], "gpufleet:fleet": fleet}}, sort_keys=False)


@settings(max_examples=300, **COMMON)
@given(fleet=mutated_fleet())
@example(fleet={**FLEET, "zones": [{"a": 1}]})
@example(fleet={**FLEET, "gpu": {"kind": ["A10"]}})
@example(fleet={**FLEET, "region": ""})  # also unlike the provider's alicloud:region, named on that key
def test_generated_stack_specs(tmp_path_factory, fleet):
    """A malformed stack file: the loader gives a Fleet or a UserError on the file, never anything else."""
    GENERATED["cases"] += 1
    root = tmp_path_factory.mktemp("p")
    (root / "stacks").mkdir()
    (root / "Pulumi.yaml").write_text("name: gpufleet\n")
    shown = f"stacks/Pulumi.{STACK}.yaml"
    (root / shown).write_text(_dump(fleet))
    from gpufleet import validation

    before = snapshot(root)
    try:
        validation.load_fleet(STACK, root)
    except UserError as exc:
        assert exc.problems and all(p.file == shown for p in exc.problems), exc
        # on the spec, or on the provider's region key when the spec's region is changed (loader.stack_name_problems)
        assert all(p.path.startswith("fleet") or p.path in ("", "config.alicloud:region") for p in exc.problems), exc
    # `region new` reads every stack's VPC: a malformed one is skipped (and named), never a traceback
    from gpufleet import regions

    _, skipped = regions.existing_cidrs_and_skipped("alicloud", root)
    assert all(shown in s or "fleet.network.vpc_cidr" in s for s in skipped), skipped
    assert snapshot(root) == before
    shutil.rmtree(root)


@settings(max_examples=200, **COMMON)
@given(data=st.one_of(st.binary(max_size=200), nasty.map(lambda v: yaml.safe_dump(v).encode())))
@example(data=b"a: 1\na: 2\n")
@example(data=b"x: .nan\n")
@example(data=b"[" * 70 + b"]" * 70)
def test_generated_input_files(tmp_path_factory, data):
    """Arbitrary bytes as a usage file, a discounts file, a JSON config: UserError naming the file, or a value."""
    GENERATED["cases"] += 1
    from gpufleet.cost import estimate, usage

    folder = tmp_path_factory.mktemp("f")
    for name, read in (
        ("u.yaml", lambda p: usage.load(None, str(p))),
        ("d.yaml", lambda p: estimate.load_discounts(str(p))),
        ("c.json", lambda p: inputs.load_json(p)),
    ):
        p = folder / name
        p.write_bytes(data)
        try:
            read(p)
        except UserError as exc:
            assert all(pr.file == str(p) for pr in exc.problems), exc
    shutil.rmtree(folder)


flag_values = st.one_of(nasty_text, st.floats().map(str), st.integers(-5, 10**6).map(str))


@settings(max_examples=120, **COMMON)
@given(name=st.one_of(st.none(), nasty_text), cidr=st.one_of(st.none(), nasty_text, st.just("10.40.0.0/33")))
@example(name="../evil", cidr=None)
@example(name=None, cidr="foo")
def test_generated_region_new(project, capsys, name, cidr):
    """`region new` with generated --name / --cidr: exit 0 (then a stack file exists) or exit 2 and nothing written."""
    GENERATED["cases"] += 1
    argv = ["region", "new", "--cloud", "alicloud", "--region", "cn-beijing", "--env", "dev"]
    if name is not None:
        argv += ["--name", name]
    if cidr is not None:
        argv += ["--cidr", cidr]
    before = snapshot(project / "stacks")
    r = run_cli(argv, capsys)
    assert "Traceback" not in r.text
    if r.code == 0:
        new = set(snapshot(project / "stacks")) - set(before)
        assert len(new) == 1
        for p in new:
            os.unlink(p)
    else:
        assert r.code == 2, r.text
        assert "--name" in r.text or "--cidr" in r.text or "arguments" in r.text, r.text
        assert snapshot(project / "stacks") == before


@settings(max_examples=120, **COMMON)
@given(peak=flag_values, per_node=flag_values, redundancy=st.integers(-3, 2000).map(str))
@example(peak="nan", per_node="2", redundancy="1")
@example(peak="10", per_node="inf", redundancy="1")
def test_generated_capacity_numbers(tmp_path, capsys, peak, per_node, redundancy):
    GENERATED["cases"] += 1
    r = run_cli(["plan", "capacity", "--peak-qps", peak, "--qps-per-node", per_node, "--redundancy", redundancy], capsys)
    assert "Traceback" not in r.text
    assert r.code in (0, 2), r.text
    if r.code == 2:
        assert "--" in r.text, r.text


CATALOG = yaml.safe_load((ROOT / "src" / "gpufleet" / "cost" / "data" / "alicloud-cn-hangzhou.yaml").read_text())
LOCK = yaml.safe_load((ROOT / "images" / "lock.json").read_text())


@st.composite
def mutated(draw, doc):
    doc = copy.deepcopy(doc)
    all_paths = [p for p in paths(doc) if p][:400]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(all_paths))
        parent = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            if draw(st.booleans()):
                parent[path[-1]] = draw(nasty)
            elif isinstance(parent, dict):
                parent.pop(path[-1], None)
        except (KeyError, IndexError, TypeError):
            pass
    return doc


@settings(max_examples=100, **COMMON)
@given(doc=mutated(CATALOG), lock_doc=mutated(LOCK))
@example(doc=CATALOG, lock_doc={"version": 1})  # found by the generator: a lock without `images` was a KeyError
def test_generated_catalogs_and_locks(tmp_path_factory, doc, lock_doc):
    """A hand-edited price catalog or lock file: read whole, or a UserError naming the file; never a traceback."""
    GENERATED["cases"] += 1
    import json

    from gpufleet.cost import catalog as pricecat
    from gpufleet.stacks import lock

    folder = tmp_path_factory.mktemp("c")
    (folder / "alicloud-cn-hangzhou.yaml").write_text(yaml.safe_dump(doc))
    pricecat._read.cache_clear()
    try:
        pricecat.load("alicloud", "cn-hangzhou", folder)
    except UserError as exc:
        assert all(p.file == "cost/data/alicloud-cn-hangzhou.yaml" for p in exc.problems), exc
    finally:
        pricecat._read.cache_clear()
    lp = folder / "lock.json"
    try:
        lp.write_text(json.dumps(lock_doc, allow_nan=False))
    except ValueError:
        lp.write_text("NaN")
    try:
        for recipe in ("cuda13-vllm", "cuda12-vllm-v100"):
            lock.image_for(recipe, "alicloud", "cn-hangzhou", lp)
    except UserError as exc:
        assert all(p.file == str(lp) for p in exc.problems), exc
    shutil.rmtree(folder)


# --- issue 27: the classes the clouds refuse, for both clouds ---------------------------------------------------

EDGE_STACKS = {
    stack: yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    for stack in ("alicloud-cn-hangzhou-dev", "tencentcloud-ap-guangzhou-dev")
}
CIDR_FIELDS = {
    "network.vpc_cidr": lambda f, v: f["network"].update(vpc_cidr=v),
    "network.ssh_cidrs": lambda f, v: f["network"].update(ssh_cidrs=[v]),
    "load_balancer.allowed_cidrs": lambda f, v: f.setdefault("load_balancer", {}).update(allowed_cidrs=[v]),
}
LIST_SETTERS = {
    "autoscaling.schedules": lambda f, n: f.setdefault("autoscaling", {}).update(
        schedules=[{"name": f"s{i:05d}", "cron": "0 1 * * *", "min": 1, "max": 1} for i in range(n)]
    ),
    "tags": lambda f, n: f.update(tags={f"k{i}": "v" for i in range(n)}),
    "network.ssh_cidrs": lambda f, n: f["network"].update(ssh_cidrs=[f"10.{i // 256}.{i % 256}.0/24" for i in range(n)]),
    "load_balancer.allowed_cidrs": lambda f, n: f.setdefault("load_balancer", {}).update(
        allowed_cidrs=[f"10.{i // 256}.{i % 256}.0/24" for i in range(n)]
    ),
}
ipv4_net = st.builds(lambda a, p: str(ipaddress.ip_network(f"{a}/{p}", strict=False)), st.ip_addresses(v=4), st.integers(8, 24))
ipv6_net = st.builds(lambda a, p: str(ipaddress.ip_network(f"{a}/{p}", strict=False)), st.ip_addresses(v=6), st.integers(8, 64))
identifier = st.from_regex(r"[a-z][a-z_]{1,12}", fullmatch=True)


def _contact_ok(v: str) -> bool:
    """The documented rule (docs/spec.md), written independently of the pattern in spec.py."""
    control = any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or unicodedata.category(c) == "Cf" for c in v)
    return 1 <= len(v) <= 128 and not control and v == v.strip()


@st.composite
def edge_case(draw):
    """(stack, the edited stack document, what must be said: (field, words) or None when the class is accepted)."""
    stack = draw(st.sampled_from(sorted(EDGE_STACKS)))
    doc = copy.deepcopy(EDGE_STACKS[stack])
    fleet = doc["config"]["gpufleet:fleet"]
    kind = draw(st.sampled_from(["ip", "contact", "unknown_key", "config_key", "list", "tag_length"]))
    if kind == "ip":
        field = draw(st.sampled_from(sorted(CIDR_FIELDS)))
        six = draw(st.booleans())
        value = draw(ipv6_net if six else ipv4_net)
        CIDR_FIELDS[field](fleet, value)
        return stack, doc, (f"fleet.{field}", f"{value} is IPv6") if six else (f"fleet.{field}", None)
    if kind == "contact":
        value = draw(
            st.one_of(
                st.text(max_size=140),
                st.text(min_size=120, max_size=140, alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x2FFF)),
                st.sampled_from(["", "a\nb", "\t", " x", "x ", "x" * 129, "x" * 128, "值班组"]),
            )
        )
        fleet.setdefault("alarms", {})["contact_group"] = value
        return stack, doc, None if _contact_ok(value) else ("fleet.alarms.contact_group", "1 to 128 characters")
    if kind == "tag_length":
        # the documented lengths (not read from rules.py): Alibaba keys 64 (SLB CreateLoadBalancer Tag.Key, the CLB is
        # tagged too), values 128 (ECS TagResources); Tencent keys 127, values 255 (tag naming limits)
        most = {"alicloud": (64, 128), "tencentcloud": (127, 255)}[fleet["cloud"]]
        value_side = draw(st.booleans())
        n = most[value_side] + draw(st.integers(-2, 2))
        key, value = ("team", "v" * n) if value_side else ("k" * n, "v")
        fleet["tags"] = {key: value}
        return stack, doc, (f"fleet.tags.{key}", f"length {n} is outside" if n > most[value_side] else None)
    if kind == "unknown_key":
        where = draw(st.sampled_from([(), ("network",), ("gpu",), ("replicas",), ("serving",), ("model",)]))
        key = draw(identifier)
        parent = fleet
        for part in where:
            parent = parent[part]
        if key in parent or key in _fields(where):
            return stack, doc, None  # a real field: not this class
        parent[key] = 1
        return stack, doc, (".".join(("fleet", *where, key)), "unknown field")
    if kind == "config_key":
        key = "gpufleet:" + draw(identifier)
        if key in loader.CONFIG_KEYS:
            return stack, doc, None
        doc["config"][key] = "x"
        return stack, doc, (f"config.{key}", "unknown gpufleet config key")
    path = draw(st.sampled_from(sorted(LIST_SETTERS)))
    cap = registry.list_caps(fleet["cloud"])[path]
    n = cap.most + draw(st.sampled_from([-1, 0, 1, 2, 50]))
    LIST_SETTERS[path](fleet, n)
    return stack, doc, (f"fleet.{path}", f"keep at most {cap.most}") if n > cap.most else (f"fleet.{path}", None)


def _fields(where: tuple) -> set[str]:
    from gpufleet.stacks.spec import FleetSpec

    model = FleetSpec
    for part in where:
        model = model.model_fields[part].annotation
    return set(model.model_fields)


@settings(max_examples=150, **COMMON)
@given(case=edge_case())
@example(case=("alicloud-cn-hangzhou-dev", None, None))  # the shipped stack, untouched
def test_generated_edge_classes(tmp_path_factory, case):
    """IP families, lengths and characters, unknown keys and lists at and over the clouds' caps, on both clouds: the
    class's problem is named on its field (or, where accepting is right, that field has no such problem); a refusal is
    a UserError on the file and writes nothing."""
    GENERATED["cases"] += 1
    stack, doc, expect = case
    doc = doc or EDGE_STACKS[stack]
    root = tmp_path_factory.mktemp("e")
    (root / "stacks").mkdir()
    (root / "Pulumi.yaml").write_text("name: gpufleet\n")
    shown = f"stacks/Pulumi.{stack}.yaml"
    (root / shown).write_text(yaml.safe_dump(doc, sort_keys=False, width=1 << 30))
    from gpufleet import validation

    before = snapshot(root)
    try:
        validation.load_fleet(stack, root, sizing=False)
        said = []
    except UserError as exc:
        assert exc.problems and all(p.file == shown for p in exc.problems), exc
        assert all("\n" not in str(p) for p in exc.problems), exc
        said = [(p.path, p.message) for p in exc.problems]
    if expect is not None:
        field, words = expect
        on_field = [m for p, m in said if p == field]
        if words is None:  # accepted for this class: no IPv6, cap or length complaint on the field
            assert not any(w in m for m in on_field for w in ("IPv6", "keep at most", "is outside")), said
        else:
            assert any(words in m for m in on_field), (expect, said)
    assert snapshot(root) == before
    shutil.rmtree(root)
