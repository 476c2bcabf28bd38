"""The price catalog files: complete, sourced, and exactly what the documented rules derive."""

from decimal import Decimal

import pytest
from tools import rename_fails_at

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
    """The nearest real quote first: the 2026-09-24 DescribePrice pair for gn7i-c8g1.2xlarge, less its 100 GiB disk."""
    sh = catalog.load("alicloud", "cn-shanghai")  # the quote's own region
    payg = sh.get("instance/ecs.gn7i-c8g1.2xlarge", "payg")
    assert payg.price == Decimal("9.74") - 100 * Decimal("0.0021") == Decimal("9.53")
    assert payg.quality == "third-party" and (payg.lowest, payg.highest) == (payg.price, payg.price)
    assert payg.as_of == "2026-09-24" and any("9.74 CNY/hour" in x for x in payg.quotes)
    monthly = sh.get("instance/ecs.gn7i-c8g1.2xlarge", "monthly")
    assert monthly.price == Decimal("4675.66") - 100 * Decimal("1.00")
    # Hangzhou: the same quote from another region, the stated +/-10 %
    hz = catalog.load("alicloud", "cn-hangzhou")
    m = hz.get("instance/ecs.gn7i-c8g1.2xlarge", "monthly")
    assert (m.price, m.low, m.high, m.quality) == (Decimal("4575.66"), Decimal("4118.0940"), Decimal("5033.2260"), "estimate")
    # yearly: monthly x the documented 0.85 (one point: +/-10 % of the ratio)
    y = hz.get("instance/ecs.gn7i-c8g1.2xlarge", "yearly")
    assert y.price == (Decimal("4575.66") * Decimal("0.85")).quantize(Decimal("0.0001"))
    assert y.low == (Decimal("4118.094") * Decimal("0.85") * Decimal("0.9")).quantize(Decimal("0.0001"))
    # spot: the third-party ~3.1 CNY/h for Beijing/Hangzhou is this type's own quote
    assert hz.get("instance/ecs.gn7i-c8g1.2xlarge", "spot").price == Decimal("3.1")
    # gn7i-c16g1: no CNY payg quote; USD 1.343 x its family's CNY/USD pair (9.53 / 1.2684), the range from all pairs
    k_gn7i = Decimal("9.53") / Decimal("1.2684")
    k_gn6i = (Decimal("11.84") - Decimal("0.21")) / Decimal("1.118")
    c16 = hz.get("instance/ecs.gn7i-c16g1.4xlarge", "payg")
    assert c16.price == (Decimal("1.343") * k_gn7i).quantize(Decimal("0.0001"))
    assert c16.high == (Decimal("1.343") * k_gn6i).quantize(Decimal("0.0001")) and c16.low is None  # low = price
    assert c16.quality == "estimate" and "CNY/USD" in c16.derivation and len(c16.quotes) == 3
    # the monthly ratio from the one real pair, 0.658, with the stated +/-20 %
    r = Decimal("4575.66") / (730 * Decimal("9.53"))
    assert hz.get("instance/ecs.gn7i-c16g1.4xlarge", "monthly").price == (c16.price * 730 * r).quantize(Decimal("0.0001"))
    # linear family rule: gn6v 4xlarge (2 GPU) = 2 x 2xlarge
    assert hz.get("instance/ecs.gn6v-c8g1.4xlarge", "payg").price == 2 * hz.get("instance/ecs.gn6v-c8g1.2xlarge", "payg").price
    # no source at all: missing, never a guess
    for billing in ("payg", "monthly", "yearly", "spot"):
        row = hz.get("instance/ecs.gn7-c12g1.3xlarge", billing)
        assert row.price is None and row.quality == "missing"


def test_a_monthly_gn7i_node_is_within_the_spread_of_the_public_quote():
    """Issue 16 done-when: a monthly gn7i node (instance + its 100 GiB ESSD PL1 system disk, as quoted) costs
    within the sourced spread of 4,675.66 CNY, priced through the real cost function."""
    from gpufleet.components.alicloud import pricing
    from gpufleet.cost.resources import PricingContext
    from gpufleet.cost.usage import Usage

    node = {
        "type": "alicloud:ecs/instance:Instance",
        "name": "n",
        "inputs": {
            "instanceType": "ecs.gn7i-c8g1.2xlarge",
            "instanceChargeType": "PrePaid",
            "period": 1,
            "periodUnit": "Month",
            "systemDiskCategory": "cloud_essd",
            "systemDiskPerformanceLevel": "PL1",
            "systemDiskSize": 100,
        },
    }
    for region in ("cn-shanghai", "cn-hangzhou", "cn-beijing"):
        cat = catalog.load("alicloud", region)
        comps = pricing.ali_instance(node, PricingContext("alicloud", region, Usage(), Decimal(1), [node]))
        rows = [(c.monthly_quantity, cat.get(c.price_key, c.billing)) for c in comps]
        total = sum(qty * r.price for qty, r in rows)
        low = sum(qty * r.lowest for qty, r in rows)
        high = sum(qty * r.highest for qty, r in rows)
        assert low <= Decimal("4675.66") <= high, (region, low, high)
        assert total == Decimal("4675.66"), region  # the quote, split into instance and disk lines
    # the old rule (payg x 730 / 3) gave 2160.51: 54 % below the quote and outside any spread


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


def test_tencent_quotes_and_ratios_from_real_pairs():
    gz = catalog.load("tencentcloud", "ap-guangzhou")
    payg = gz.get("instance/GN7.2XLARGE32", "payg")
    assert (payg.price, payg.quality) == (Decimal("8.7"), "third-party")  # the ap-guangzhou-6 reseller price
    monthly = gz.get("instance/GN7.2XLARGE32", "monthly")  # the scraped 2500, region not stated: +/-10 %
    assert (monthly.price, monthly.low, monthly.high, monthly.quality) == (
        Decimal("2500"),
        Decimal("2250"),
        Decimal("2750"),
        "estimate",
    )
    # spot: the documented ~20 % of payg (one point, +/-25 % stated), not the old 40 %
    spot = gz.get("instance/GN7.2XLARGE32", "spot")
    assert (spot.price, spot.low, spot.high) == (Decimal("1.74"), Decimal("1.305"), Decimal("2.175"))
    # GT4: monthly from the scrape; payg = monthly / (730 x the mean of the monthly/payg points), range from their spread
    points = [Decimal(2500) / (730 * Decimal("8.7")), Decimal(1) / 3, Decimal(1) / 4]
    mean = sum(p.quantize(Decimal("1E-10")) for p in points) / 3
    gt4 = gz.get("instance/GT4.4XLARGE96", "payg")
    assert abs(gt4.price - Decimal(12948) / (730 * mean)) < Decimal("0.0001")
    assert abs(gt4.high - Decimal(12948) * Decimal("1.1") / (730 * Decimal("0.25"))) < Decimal("0.0001")
    assert gz.get("instance/GT4.8XLARGE192", "monthly").price == 2 * Decimal("12948")
    assert gz.get("instance/GT4.20XLARGE474", "payg").quality == "missing"  # not a multiple of a priced size
    # step pricing: no GPU family is published as qualifying, and the row says so
    assert "vendor names no qualifying family" in payg.derivation


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
    assert all(REFERENCE not in p.read_text() for p in data.glob("alicloud-*.yaml")), first


# The research notes the facts were first gathered in are not in the repository: nothing in it may name them (the
# facts it cites are in cost/data/sources-*.yaml and quotes-*.yaml). The name is built so this file does not hold it.
REFERENCE = "pricing" + "-facts"


def test_no_file_names_the_research_notes_outside_the_repository():
    import subprocess
    from pathlib import Path

    root = Path(catalog.__file__).resolve().parents[3]
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    named = [f for f in files if (root / f).is_file() and REFERENCE in (root / f).read_text(errors="ignore")]
    assert named == []


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('price: "9.74"', 'price: "-9.74"', "rows.0.price: '-9.74' is not a price: give the published figure as a number >= 0"),
        ('price: "9.74"', 'price: "abc"', "rows.0.price: 'abc' is not a price"),
        ("currency: CNY, unit: hour", "currency: EUR, unit: hour", "rows.0.currency: 'EUR' cannot be converted"),
        ("currency: CNY, unit: hour", "currency: CNY", "rows.0.unit: missing"),
        ("billing: payg", "billing: paygo", "rows.0.billing: unknown billing 'paygo' (did you mean 'payg'?)"),
        ('as_of: "2026-09-24"', 'as_of: "yesterday"', "rows.0.as_of: 'yesterday' is not a date"),
        ('as_of: "2026-09-24"', 'as_of: "2099-01-01"', "rows.0.as_of: '2099-01-01' is after today"),
    ],
)
def test_build_refuses_a_bad_price_point_and_writes_nothing(tmp_path, monkeypatch, old, new, says):
    """A quote that is negative, no number, in a currency the build cannot convert, incomplete, or badly dated was
    written into catalogs every cost command then refused (or a traceback): now exit 2 naming the row and field."""
    import shutil
    from pathlib import Path

    from gpufleet.errors import UserError

    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-05T12:00:00Z")
    data = tmp_path / "data"
    shutil.copytree(Path(catalog.__file__).parent / "data", data)
    for p in data.glob("alicloud-*.yaml"):
        p.unlink()  # a build writes every region's file: any file here was written by the failed build
    quotes = data / "quotes-alicloud.yaml"
    text = quotes.read_text()
    assert old in text
    quotes.write_text(text.replace(old, new, 1))
    with pytest.raises(UserError) as exc:
        derive.build("alicloud", "2026-12-05", data)
    assert str(exc.value).startswith(f"{data / 'quotes-alicloud.yaml'}: {says}"), str(exc.value)
    assert list(data.glob("alicloud-*.yaml")) == []


def _full_disk_at(monkeypatch, nth: int) -> list[str]:
    """files' temporary write fails with ENOSPC on its nth call (a disk that fills during the build)."""
    import errno

    from gpufleet import files

    real, calls = files._write_temp, []

    def full_disk(folder, name, data, mode):
        calls.append(name)
        if len(calls) == nth:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(folder, name, data, mode)

    monkeypatch.setattr(files, "_write_temp", full_disk)
    return calls


def _stale_copy(tmp_path):
    """A copy of the shipped data whose catalogs all say another as_of (1999-01-01): a build rewrites every one of them."""
    import re
    import shutil
    from pathlib import Path

    data = tmp_path / "data"
    shutil.copytree(Path(catalog.__file__).parent / "data", data)
    for p in data.glob("*-*-*.yaml"):
        if p.stem.split("-", 1)[0] in REGIONS:
            p.write_text(re.sub(r"(?m)^as_of: .*$", "as_of: '1999-01-01'", p.read_text(), count=1))
    return data


def _files(data):
    return {p.name: p.read_bytes() for p in data.iterdir()}


def test_a_build_that_fails_partway_writes_no_catalog(tmp_path, monkeypatch):
    """A full disk at the second catalog left the first rebuilt and the others old (cost compare then compared two
    builds) while saying 'the old file is unchanged', with the path twice: now every catalog is rendered and staged
    first, and none is replaced unless all are written."""
    from gpufleet.errors import UserError

    data = _stale_copy(tmp_path)
    before = _files(data)
    calls = _full_disk_at(monkeypatch, 2)
    with pytest.raises(UserError) as exc:
        derive.build("alicloud", "2026-12-03", data)
    assert len(calls) == 2
    assert _files(data) == before  # no catalog replaced, no temporary file left
    (problem,) = exc.value.problems
    assert str(problem) == f"catalog build: {data}: cannot write: No space left on device; nothing was written"


def test_a_build_of_both_clouds_is_one_write(tmp_path, monkeypatch, capsys):
    """`gpufleet catalog build` builds the clouds together: a failure in the second cloud's catalogs leaves the first
    cloud's old too (exit 2, nothing written), and once the disk has room every catalog is written."""
    from inputs.inputs_helpers import run_cli
    from msgspec.structs import replace

    from gpufleet import registry

    data = _stale_copy(tmp_path)
    for cloud in REGIONS:
        mod = registry.module(cloud, "profile")
        monkeypatch.setattr(mod, "PROFILE", replace(mod.PROFILE, price_data=data))
    catalog._read.cache_clear()
    before = _files(data)
    calls = _full_disk_at(monkeypatch, 5)
    r = run_cli(["catalog", "build"], capsys)
    assert r.code == 2 and len(calls) == 5, r.text
    assert "nothing was written" in r.text and "wrote" not in r.out and "Traceback" not in r.text, r.text
    assert _files(data) == before
    monkeypatch.undo()
    for cloud in REGIONS:
        mod = registry.module(cloud, "profile")
        monkeypatch.setattr(mod, "PROFILE", replace(mod.PROFILE, price_data=data))
    r = run_cli(["catalog", "build"], capsys)
    assert r.code == 0 and r.out.count("wrote") == 6, r.text
    assert all("\nas_of: '1999-01-01'" not in (data / f"{c}-{reg}.yaml").read_text() for c, rs in REGIONS.items() for reg in rs)
    catalog._read.cache_clear()


def test_a_build_whose_rename_fails_names_the_catalogs_replaced_and_not(tmp_path, monkeypatch):
    """The catalogs' renames were unprotected (a PermissionError traceback, some catalogs new, the rest old, a
    temporary file left): now a UserError naming both sets, no temporary file left."""

    from gpufleet.errors import UserError

    data = _stale_copy(tmp_path)
    rename_fails_at(monkeypatch, 2)
    with pytest.raises(UserError) as exc:
        derive.build("alicloud", "2026-12-03", data)
    (problem,) = exc.value.problems
    said = str(problem)
    assert said.startswith(f"catalog build: {data}: cannot rename alicloud-") and "; replaced: alicloud-" in said, said
    assert "not replaced (each as it was): alicloud-" in said and "cannot be atomic" in said, said
    assert [p.name for p in data.iterdir() if p.name.startswith(".")] == []
