"""Usage keys are declared next to the resource they price (issue 25): the keys every cloud reads in
cost/resources.py USAGE, a cloud's own in its pricing module's USAGE; the usage profile knows exactly those."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from gpufleet import registry
from gpufleet.cost import resources, usage

SRC = Path(usage.__file__).resolve().parents[1]


def test_the_defaults_file_lists_the_shared_keys_in_their_order_all_unknown():
    doc = yaml.safe_load(usage.DEFAULTS.read_text())
    assert list(doc) == [k.name for k in resources.USAGE]
    assert set(doc.values()) == {None}


def test_every_key_a_pricing_function_reads_is_declared_for_its_cloud():
    """Each `ctx.usage.<key>` in the cost code and the clouds' pricing modules names a declared key: the shared ones
    anywhere, a cloud's own only in that cloud's package."""
    shared = {k.name for k in resources.USAGE}
    files = [*sorted((SRC / "cost").glob("*.py")), *sorted((SRC / "components").glob("*/pricing.py"))]
    read = 0
    for path in files:
        cloud = path.parent.name if path.parent.parent.name == "components" else None
        allowed = shared | ({k.name for k in registry.usage_keys(cloud)} if cloud else set())
        for key in re.findall(r"(?:\bctx\.|(?<![/\w.]))usage\.([a-z][a-z0-9_]*)\b", path.read_text()):
            if key in vars(usage) or key in {"get", "known", "with_keys", "files", "notes", "values", "py", "yaml"}:
                continue  # the module's functions (usage.load), the profile's own methods and fields
            read += 1
            assert key in allowed, f"{path.relative_to(SRC)} reads usage key {key!r}, declared for none of its clouds"
    assert read >= 8


def test_a_profile_holds_declared_keys_only_and_unknown_is_none():
    assert usage.Usage.of(lb_egress_gb=None) == usage.Usage()
    with pytest.raises(TypeError, match="lb_egres"):
        usage.Usage.of(lb_egres=Decimal(1))
    u = usage.Usage.of(nat_cu_hours=Decimal(730), files=("a.yaml",))
    assert u.nat_cu_hours == Decimal(730) and u.lb_egress_gb is None
    v = u.with_keys(replicas_average=Decimal(3))
    assert (v.replicas_average, v.nat_cu_hours, v.files) == (Decimal(3), Decimal(730), ("a.yaml",))
    assert list(v.known("alicloud"))[: len(resources.USAGE)] == [k.name for k in resources.USAGE]
    assert "nat_cu_hours" in v.known("alicloud") and "nat_cu_hours" not in v.known("tencentcloud")
