"""The price catalog files: complete, sourced, and exactly what the documented rules derive."""

from decimal import Decimal

import pytest
from gpufleet.cost import catalog, derive
from gpufleet.stacks import catalog as stackcat

REGIONS = {
    "alicloud": ["cn-hangzhou", "cn-beijing", "cn-shanghai"],
    "tencentcloud": ["ap-guangzhou", "ap-shanghai", "ap-beijing"],
}
CASES = [(c, r) for c, rs in REGIONS.items() for r in rs]


@pytest.mark.parametrize("cloud,region", CASES)
def test_every_instance_type_has_four_billing_rows(cloud, region):
    cat = catalog.load(cloud, region)
    for it in stackcat.instance_types(cloud):
        for billing in ("payg", "monthly", "yearly", "spot"):
            assert cat.get(f"instance/{it.type}", billing) is not None, (it.type, billing)


@pytest.mark.parametrize("cloud,region", CASES)
def test_rows_carry_currency_unit_source_date_quality(cloud, region):
    cat = catalog.load(cloud, region)
    assert cat.currency == "CNY"
    for row in cat.rows.values():
        assert row.quality in catalog.QUALITIES
        assert row.currency == "CNY" and row.unit
        assert (row.price is None) == (row.quality == "missing"), row
        if row.price is not None:
            assert row.source and row.as_of[:2] == "20", row
        if row.quality in ("estimate", "missing"):
            assert row.derivation, f"{row.key} {row.billing}: an estimate must say how it was derived"


@pytest.mark.parametrize("cloud", REGIONS)
def test_committed_files_are_what_the_rules_derive(cloud, tmp_path):
    for region in REGIONS[cloud]:
        committed = catalog.load(cloud, region)
        fresh = derive.derive(cloud, region, committed.built)
        mine = {k: r for k, r in committed.rows.items() if r.quality != "vendor API"}
        assert mine == {k: r for k, r in fresh.rows.items() if k in mine}
        assert set(fresh.rows) == set(committed.rows), "run `gpufleet catalog build` after editing sources"


def test_alicloud_gpu_price_arithmetic_by_hand():
    cat = catalog.load("alicloud", "cn-hangzhou")
    payg = cat.get("instance/ecs.gn7i-c8g1.2xlarge", "payg")
    assert payg.price == Decimal("1.2684") * Decimal("7.00") == Decimal("8.8788")
    assert payg.quality == "estimate" and "Spare Cores" in payg.derivation
    monthly = cat.get("instance/ecs.gn7i-c8g1.2xlarge", "monthly").price
    assert monthly == Decimal("2160.5080")  # 8.8788 x 730 / 3
    assert cat.get("instance/ecs.gn7i-c8g1.2xlarge", "yearly").price == Decimal("1836.4318")  # x 0.85
    assert cat.get("instance/ecs.gn7i-c8g1.2xlarge", "spot").price == Decimal("3.5515")  # 8.8788 x 0.40
    # linear family rule: gn6v 4xlarge (2 GPU) = 2 x 2xlarge
    assert cat.get("instance/ecs.gn6v-c8g1.4xlarge", "payg").price == 2 * cat.get("instance/ecs.gn6v-c8g1.2xlarge", "payg").price
    # no source at all: missing, never a guess
    for billing in ("payg", "monthly", "yearly", "spot"):
        row = cat.get("instance/ecs.gn7-c12g1.3xlarge", billing)
        assert row.price is None and row.quality == "missing"


def test_official_prices_are_the_documented_ones():
    hz = catalog.load("alicloud", "cn-hangzhou")
    assert hz.get("disk/cloud_essd/PL1", "payg").price == Decimal("0.0021")
    assert hz.get("disk/cloud_essd/PL1", "monthly").price == Decimal("1.00")
    assert hz.get("disk/cloud_essd/PL1", "payg").quality == "official"
    assert hz.get("nat/cu").price == Decimal("0.23") and hz.get("clb/instance").price == Decimal("0.147")
    bj = catalog.load("alicloud", "cn-beijing")
    assert bj.get("disk/cloud_essd/PL1", "payg").quality == "estimate"  # the doc's example is Hangzhou
    assert bj.get("nat/cu").quality == "official"  # the NAT doc lists Beijing
    assert hz.get("clb/lcu").price is None and hz.get("clb/lcu").quality == "missing"


def test_tencent_third_party_prices_and_the_3x_rule():
    gz = catalog.load("tencentcloud", "ap-guangzhou")
    assert gz.get("instance/GN7.2XLARGE32", "payg").price == Decimal("8.7")
    assert gz.get("instance/GN7.2XLARGE32", "monthly").price == Decimal("2500")
    assert gz.get("instance/GN7.2XLARGE32", "monthly").quality == "third-party"
    # GT4: monthly from the scrape, payg by the documented 3-4x rule (low end)
    assert gz.get("instance/GT4.4XLARGE96", "payg").price == (Decimal("12948") / 730 * 3).quantize(Decimal("0.0001"))
    assert gz.get("instance/GT4.8XLARGE192", "monthly").price == 2 * Decimal("12948")
    assert gz.get("instance/GT4.20XLARGE474", "payg").quality == "missing"  # not a multiple of a priced size


def test_unknown_region_is_a_user_error():
    from gpufleet.errors import UserError

    with pytest.raises(UserError, match="cn-hangzhou"):
        catalog.load("alicloud", "cn-hangzou")


def test_a_build_with_the_same_prices_writes_nothing(tmp_path):
    """Only the build day would differ: the files stay as they are (issue 20: every file was rewritten)."""
    import shutil
    from pathlib import Path

    data = tmp_path / "data"
    shutil.copytree(Path(catalog.__file__).parent / "data", data)
    first = derive.build("alicloud", "2030-01-01", data)
    before = {p.name: p.read_bytes() for p in data.glob("alicloud-*.yaml")}
    assert derive.build("alicloud", "2030-01-02", data) == []
    assert {p.name: p.read_bytes() for p in data.glob("alicloud-*.yaml")} == before
    assert all("NOT FOUND in pricing-facts.md" not in p.read_text() for p in data.glob("alicloud-*.yaml")), first
