"""`catalog refresh` through the vendors' real SDKs against a fake pricing endpoint on 127.0.0.1 that answers with the
API references' documented sample responses (tests/cost/fixtures/vendor/, each with its .source.txt). The samples are
for other instance types (ecs.g6.large, S5.16XLARGE256, ...): where the fake puts the asked type into a sample, it says so.
Never the network."""

import copy
import json
import shutil
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from gpufleet.components.alicloud import prices as ali_prices
from gpufleet.components.tencentcloud import prices as tc_prices
from gpufleet.cost import catalog, derive, refresh
from gpufleet.errors import UserError

VENDOR = Path(__file__).parent / "fixtures" / "vendor"


def fixture(name: str) -> dict:
    return json.loads((VENDOR / f"{name}.json").read_text())


STEPPED = "GN7.2XLARGE32"  # answered with the doc's example 1 (steps 0.2 / 0.12 / 0.1)
TC_FAILS = "GN10X.2XLARGE40"
ALI_FAILS = "ecs.gn7-c12g1.3xlarge"
ALI_HISTORY = "ecs.gn7i-c8g1.2xlarge"  # the spot history sample, its InstanceType set to this type
ALI_ADVICE = "ecs.gn6i-c4g1.xlarge"  # no history; the spot advice sample, its InstanceType set to this type


@pytest.fixture
def fake():
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            status = 200
            if self.headers.get("X-TC-Action"):
                req = json.loads(body)
                seen.append(("tc", self.headers["X-TC-Action"], req, self.headers.get("Authorization", "")))
                charge = req.get("InstanceChargeType", "POSTPAID_BY_HOUR")
                if req["InstanceType"] == TC_FAILS:
                    out = fixture("tencentcloud-error")
                elif charge == "PREPAID":
                    out = fixture("tencentcloud-inquirypricerun-prepaid")
                elif req["InstanceType"] == STEPPED and charge == "POSTPAID_BY_HOUR":
                    out = fixture("tencentcloud-inquirypricerun-default")
                else:  # POSTPAID_BY_HOUR and SPOTPAID (no SPOTPAID example is documented; same InstancePrice shape)
                    out = fixture("tencentcloud-inquirypricerun-postpaid-by-hour")
            else:
                q = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                q.update({k: v[0] for k, v in parse_qs(body.decode()).items()})
                action = self.headers.get("x-acs-action") or q.get("Action")
                seen.append(("ali", action, q, self.headers.get("Authorization", "")))
                itype = q.get("InstanceType") or q.get("InstanceTypes.1", "")
                if itype == ALI_FAILS:
                    out, status = fixture("alicloud-error"), 404
                elif action == "DescribePrice":
                    out = fixture("alicloud-describeprice")
                elif action == "DescribeSpotPriceHistory":
                    out = fixture("alicloud-describespotpricehistory")
                    for p in out["SpotPrices"]["SpotPriceType"]:
                        p["InstanceType"] = ALI_HISTORY if itype == ALI_HISTORY else "ecs.g5.large"
                else:  # DescribeSpotAdvice
                    out = copy.deepcopy(fixture("alicloud-describespotadvice"))
                    if itype == ALI_ADVICE:
                        res = out["AvailableSpotZones"]["AvailableSpotZone"][1]["AvailableSpotResources"]
                        res["AvailableSpotResource"][0]["InstanceType"] = ALI_ADVICE
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{srv.server_address[1]}", seen
    srv.shutdown()


@pytest.fixture
def data(tmp_path):
    """A copy of the shipped catalogs and sources."""
    folder = tmp_path / "data"
    folder.mkdir()
    for p in catalog.DATA.glob("*.yaml"):
        shutil.copy(p, folder / p.name)
    return folder


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder: refresh writes its cost/catalog/ (found as the project, never passed)."""
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: gpufleet\nruntime: python\n")
    monkeypatch.setenv("GPUFLEET_PROJECT", str(root))
    catalog._read.cache_clear()
    yield root / "cost" / "catalog"
    catalog._read.cache_clear()


# --- the pure parsers, on the documented samples ---------------------------------------------------------------


def test_describe_price_sample():
    got = ali_prices.parse_describe_price(fixture("alicloud-describeprice"))
    assert (got.price, got.trade, got.currency) == (Decimal("4368"), Decimal("3712.8"), "CNY")
    assert "includes the default system disk" in got.how and "15% discount on a 1-year" in got.how
    detailed = fixture("alicloud-describeprice")
    detailed["PriceInfo"]["Price"]["DetailInfos"] = {
        "DetailInfo": [{"Resource": "instanceType", "OriginalPrice": 4000, "TradePrice": 3400}]
    }
    assert ali_prices.parse_describe_price(detailed).price == Decimal("4000")


def test_spot_history_sample_newest_price_per_zone():
    body = fixture("alicloud-describespotpricehistory")
    spot = ali_prices.parse_spot_history(body, "ecs.g5.large")
    assert (spot.price, spot.low, spot.as_of) == (Decimal("0.036"), Decimal("0.036"), "2019-11-19")
    assert "10.2 % of the pay-as-you-go" in spot.how
    assert ali_prices.parse_spot_history(body, "ecs.gn7i-c8g1.2xlarge") is None


def test_spot_advice_sample_reads_the_split_zone_items():
    assert ali_prices.parse_spot_advice(fixture("alicloud-describespotadvice"), "ecs.c5.large") == [Decimal(20)]


def test_inquiry_samples():
    hourly = tc_prices.parse_inquiry(fixture("tencentcloud-inquirypricerun-postpaid-by-hour"), 0)
    assert (hourly.price, hourly.trade, hourly.month_step_factor) == (Decimal("15.95"), Decimal("3.33"), None)
    assert "OriginalInstanceTypePrice" in hourly.how and "no step pricing" in hourly.how
    year = tc_prices.parse_inquiry(fixture("tencentcloud-inquirypricerun-prepaid"), 12)
    assert year.price == Decimal("8832") / 12 and year.trade == Decimal("1804.9") / 12
    stepped = tc_prices.parse_inquiry(fixture("tencentcloud-inquirypricerun-default"), 0)
    factor = (96 * Decimal("0.2") + 264 * Decimal("0.12") + 370 * Decimal("0.1")) / (730 * Decimal("0.2"))
    assert stepped.month_step_factor == factor
    no_own = fixture("tencentcloud-inquirypricerun-prepaid")
    del no_own["Response"]["Price"]["InstancePrice"]["OriginalInstanceTypePrice"]
    got = tc_prices.parse_inquiry(no_own, 1)
    assert got.price == Decimal("8884.5") and "includes the request's system disk" in got.how
    assert tc_prices.parse_inquiry({"Response": {"Price": {}}}, 0) is None


# --- the whole refresh, through the SDKs ------------------------------------------------------------------------


def test_alicloud_refresh_every_billing(fake, data, project, monkeypatch):
    endpoint, seen = fake
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "AKID-test")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "secret-test")
    res = refresh.refresh("alicloud", "cn-hangzhou", endpoint, "http", today="2026-12-02", data=data)
    calls = [s for s in seen if s[0] == "ali"]
    assert all(c[2]["RegionId"] == "cn-hangzhou" and "AKID-test" in c[3] for c in calls)  # signed with the user's key
    prices = [c[2] for c in calls if c[1] == "DescribePrice"]
    assert {c["PriceUnit"] for c in prices} == {"Hour", "Month", "Year"}
    assert {c[1] for c in calls} == {"DescribePrice", "DescribeSpotPriceHistory", "DescribeSpotAdvice"}
    assert any(ALI_FAILS in f and "InvalidInstanceId.NotFound" in f for f in res.failed)
    assert res.path == project / "alicloud-cn-hangzhou.yaml"  # the project's file; the shipped one is untouched
    assert (data / "alicloud-cn-hangzhou.yaml").read_bytes() == (catalog.DATA / "alicloud-cn-hangzhou.yaml").read_bytes()
    assert {r.quality for r in catalog.own("alicloud", "cn-hangzhou").rows.values()} == {"vendor API"}
    cat = catalog.load("alicloud", "cn-hangzhou", data)
    payg = cat.get(f"instance/{ALI_HISTORY}", "payg")
    assert (payg.quality, payg.price, payg.trade_price, payg.as_of) == (
        "vendor API",
        Decimal("4368"),
        Decimal("3712.8"),
        "2026-12-02",
    )
    assert cat.get(f"instance/{ALI_HISTORY}", "monthly").price == Decimal("4368")
    assert cat.get(f"instance/{ALI_HISTORY}", "yearly").price == Decimal("364")  # 4368 a year, per month
    spot = cat.get(f"instance/{ALI_HISTORY}", "spot")
    assert (spot.price, spot.quality, spot.as_of) == (Decimal("0.036"), "vendor API", "2019-11-19")  # the price's own date
    advice = cat.get(f"instance/{ALI_ADVICE}", "spot")
    assert advice.price == Decimal("4368") * Decimal("0.20") and "DescribeSpotAdvice" in advice.source
    assert any("ecs.gn6v-c8g1.2xlarge spot: no spot price history or advice" in f for f in res.failed)
    assert cat.get(f"instance/{ALI_FAILS}", "payg").quality == "missing"  # left as it was
    assert cat.get("disk/cloud_essd/PL1", "payg").quality == "official"  # untouched rows stay
    (data / "alicloud-cn-hangzhou.yaml").unlink()
    derive.build("alicloud", "2026-12-03", data)  # a later build of the shipped catalog leaves the project's rows
    assert catalog.load("alicloud", "cn-hangzhou", data).get(f"instance/{ALI_HISTORY}", "payg").quality == "vendor API"
    assert catalog.shipped("alicloud", "cn-hangzhou", data).get(f"instance/{ALI_HISTORY}", "payg").quality != "vendor API"


def test_a_second_refresh_keeps_the_rows_it_did_not_fetch(fake, data, project, monkeypatch):
    """The project's file keeps a row the vendor did not answer this time (a type gone from the region's answer)."""
    endpoint, _ = fake
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "AKID-test")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "secret-test")
    refresh.refresh("alicloud", "cn-hangzhou", endpoint, "http", today="2026-12-02", data=data)
    path = project / "alicloud-cn-hangzhou.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["rows"].append({**doc["rows"][0], "key": "instance/ecs.kept-before", "price": "1.5"})
    path.write_text(yaml.safe_dump(doc))
    catalog._read.cache_clear()
    refresh.refresh("alicloud", "cn-hangzhou", endpoint, "http", today="2026-12-03", data=data)
    kept = catalog.load("alicloud", "cn-hangzhou", data).get("instance/ecs.kept-before", doc["rows"][0]["billing"])
    assert kept is not None and kept.price == Decimal("1.5")
    assert catalog.load("alicloud", "cn-hangzhou", data).get(f"instance/{ALI_HISTORY}", "payg").as_of == "2026-12-03"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"Timestamp": "2099-01-01T00:00:00Z"}, "as_of '2099-01-01' is after today (2026-12-02)"),
        ({"Timestamp": "garbage"}, "as_of 'garbage' is not a date"),
        ({"SpotPrice": -1}, "price '-1.0000' is not a price (a number >= 0"),
    ],
)
def test_refresh_writes_no_row_its_reader_would_refuse(fake, data, project, monkeypatch, change, says):
    """A vendor answer the cost commands would refuse (a negative price, a spot price dated in the future or not at
    all) is reported as not priced and never written: the file on disk always loads, and a later refresh can run."""
    endpoint, _ = fake
    read = fixture

    def bad(name):
        out = read(name)
        if name == "alicloud-describespotpricehistory":
            for p in out["SpotPrices"]["SpotPriceType"]:
                p.update(change)
        return out

    monkeypatch.setitem(globals(), "fixture", bad)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "AKID-test")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "secret-test")
    res = refresh.refresh("alicloud", "cn-hangzhou", endpoint, "http", today="2026-12-02", data=data)
    refused = [f for f in res.failed if f.startswith(f"{ALI_HISTORY} spot: ")]
    assert len(refused) == 1 and says in refused[0] and "not written" in refused[0], res.failed
    assert all(r.billing != "spot" or ALI_HISTORY not in r.key for r in res.written) and res.written
    catalog._read.cache_clear()
    cat = catalog.load("alicloud", "cn-hangzhou", data)  # the cost commands still read it
    assert cat.get(f"instance/{ALI_HISTORY}", "spot").quality != "vendor API"
    assert cat.get(f"instance/{ALI_HISTORY}", "payg").quality == "vendor API"


def test_the_projects_rows_win_and_must_match_the_region(data, project):
    """A hand-written row in the project's file prices that item (a negotiated price); a file for another currency
    is refused, naming the file and the field."""
    shipped = catalog.shipped("alicloud", "cn-hangzhou", data)
    row = shipped.get("disk/cloud_essd/PL1", "payg")
    project.mkdir(parents=True)
    mine = catalog.Catalog("alicloud", "cn-hangzhou", "CNY", "2026-12-01", "2026-12-01")
    mine.rows[(row.key, row.billing)] = catalog.PriceRow(
        row.key, row.billing, Decimal("0.5"), row.currency, row.unit, "official", "our contract", "2026-12-01"
    )
    path = project / "alicloud-cn-hangzhou.yaml"
    catalog.write(mine, path, "cost/catalog/alicloud-cn-hangzhou.yaml", catalog.PROJECT_HEADER)
    got = catalog.load("alicloud", "cn-hangzhou", data)
    assert got.get("disk/cloud_essd/PL1", "payg").price == Decimal("0.5")
    assert got.get("nat/cu", "payg") == shipped.get("nat/cu", "payg")  # the rest stays the shipped rows
    assert catalog.shipped("alicloud", "cn-hangzhou", data).get("disk/cloud_essd/PL1", "payg") == row
    path.write_text(path.read_text().replace("currency: CNY", "currency: USD"))
    catalog._read.cache_clear()
    with pytest.raises(UserError) as exc:
        catalog.load("alicloud", "cn-hangzhou", data)
    assert "cost/catalog/alicloud-cn-hangzhou.yaml: currency: says 'USD', the shipped catalog 'CNY'" in str(exc.value)
    path.write_text("")
    catalog._read.cache_clear()
    with pytest.raises(UserError, match="cost/catalog/alicloud-cn-hangzhou.yaml: is empty; delete it .*catalog refresh"):
        catalog.load("alicloud", "cn-hangzhou", data)


CONTRACT = {
    "key": "instance/ecs.gn7i-c8g1.2xlarge",
    "billing": "payg",
    "price": "8.00",
    "currency": "CNY",
    "unit": "hour",
    "quality": "official",
    "source": "contract",
    "as_of": "2026-11-01",
}


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        # hours relabelled as months and priced (2024.88 month x 8.00)
        (
            [{**CONTRACT, "unit": "month"}],
            "rows.0.unit: says 'month', but instance/ecs.gn7i-c8g1.2xlarge (payg) is priced "
            "per 'hour' (the shipped catalog's row): give the price per hour",
        ),
        # priced as 8.00 CNY, unconverted
        (
            [{**CONTRACT, "currency": "USD"}],
            "rows.0.currency: says 'USD', the file's currency is 'CNY': a catalog's prices "
            "are in its currency; give the price in CNY",
        ),
        # the last one won without a word
        (
            [CONTRACT, {**CONTRACT, "price": "7.00"}],
            "rows.1: repeats the key and billing of rows.0 (instance/ecs.gn7i-c8g1.2xlarge, payg); keep one",
        ),
        (
            [{**CONTRACT, "quality": "great"}],
            "rows.0.quality: unknown quality 'great' (choose one of: estimate, missing, official, third-party, vendor API)",
        ),
        ([{**CONTRACT, "quality": "oficial"}], "rows.0.quality: unknown quality 'oficial' (did you mean 'official'?)"),
        (
            [{**CONTRACT, "as_of": "2026-12-04"}],
            "rows.0.as_of: '2026-12-04' is after today (2026-12-03): write the date of the price's source as YYYY-MM-DD",
        ),
        (
            [{**CONTRACT, "as_of": "last week"}],
            "rows.0.as_of: 'last week' is not a date: write the date of the price's source as YYYY-MM-DD",
        ),
        # a typo'd price key: the node became unpriced without a word
        (
            [{**{k: v for k, v in CONTRACT.items() if k != "price"}, "prcie": "8.00"}],
            "rows.0.prcie: unknown field 'prcie' (did you mean 'price'?)\n"
            "cost/catalog/alicloud-cn-hangzhou.yaml: rows.0.price: missing: give the price, or null (with quality "
            "missing) when unknown",
        ),
        ([{**CONTRACT, "billing": 5}], "rows.0.billing: expected text, got a number"),
        ([{**CONTRACT, "key": 12345}], "rows.0.key: expected text, got a number"),
        ([{**CONTRACT, "key": ""}], "rows.0.key: is empty: give it"),
        (
            [{**CONTRACT, "source": ""}],
            "rows.0.source: is empty: a price names where it comes from (a URL, a contract, an API)",
        ),
        (
            [{**CONTRACT, "quality": "missing"}],
            "rows.0.quality: is 'missing' but the row has a price: give its quality, or price: null",
        ),
        (
            [{**CONTRACT, "quality": "vendor API", "price": None}],
            "rows.0.price: is null but the quality is 'vendor API': give the price, or quality: missing",
        ),
    ],
)
def test_a_wrong_row_in_the_projects_file_is_refused(data, project, monkeypatch, rows, says):
    """Rows are checked as the file's header is: each of these was accepted and priced (exit 0)."""
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-03T00:00:00Z")
    head = {"cloud": "alicloud", "region": "cn-hangzhou", "currency": "CNY", "as_of": "2026-11-01", "built": "2026-11-01"}
    project.mkdir(parents=True)
    (project / "alicloud-cn-hangzhou.yaml").write_text(yaml.safe_dump({**head, "rows": rows}))
    with pytest.raises(UserError) as exc:
        catalog.load("alicloud", "cn-hangzhou", data)
    assert str(exc.value) == f"cost/catalog/alicloud-cn-hangzhou.yaml: {says}"
    (project / "alicloud-cn-hangzhou.yaml").write_text(yaml.safe_dump({**head, "rows": [CONTRACT]}))
    catalog._read.cache_clear()
    assert catalog.load("alicloud", "cn-hangzhou", data).get(CONTRACT["key"], "payg").price == Decimal("8.00")


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("as_of", "yesterday", "as_of: 'yesterday' is not a date: write it as YYYY-MM-DD"),
        ("as_of", "9999-01-01", "as_of: '9999-01-01' is after today (2026-12-03)"),
        ("built", "soon", "built: 'soon' is not a date"),
        ("buitl", "2026-11-01", "buitl: unknown field 'buitl' (did you mean 'built'?)"),
    ],
)
def test_the_projects_file_header_dates_are_checked(data, project, monkeypatch, field, value, says):
    """The header's as_of was printed as "catalog as of yesterday" (or a future day) without a check."""
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-03T00:00:00Z")
    head = {"cloud": "alicloud", "region": "cn-hangzhou", "currency": "CNY", "as_of": "2026-11-01", "built": "2026-11-01"}
    project.mkdir(parents=True)
    (project / "alicloud-cn-hangzhou.yaml").write_text(yaml.safe_dump({**head, field: value, "rows": [CONTRACT]}))
    with pytest.raises(UserError) as exc:
        catalog.load("alicloud", "cn-hangzhou", data)
    assert str(exc.value).startswith(f"cost/catalog/alicloud-cn-hangzhou.yaml: {says}"), str(exc.value)


def test_refresh_outside_a_project_is_refused_before_asking(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUFLEET_PROJECT", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="catalog refresh: writes your account's prices into cost/catalog/ of a gpufleet project"):
        refresh.refresh("alicloud", "cn-hangzhou", "127.0.0.1:9", "http")


def test_build_refuses_to_rewrite_an_installed_packages_catalogs(tmp_path, monkeypatch):
    """In site-packages the catalogs are the release's: `catalog build` says so and what to run instead."""
    checkout = derive.PACKAGE
    installed = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "gpufleet"
    monkeypatch.setattr(derive, "PACKAGE", installed)
    with pytest.raises(UserError) as exc:
        derive.build("alicloud", "2026-12-03")
    said = " ".join(str(exc.value).split())
    assert f"installed at {installed}, whose catalogs are its release's" in said and "gpufleet catalog refresh" in said
    monkeypatch.setattr(derive, "PACKAGE", checkout)  # src/gpufleet/ of this checkout: allowed
    derive.shipped_writable()


def test_tencent_refresh_every_billing(fake, data, project, monkeypatch):
    endpoint, seen = fake
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "SID-test")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "key-test")
    res = refresh.refresh("tencentcloud", "ap-guangzhou", endpoint, "http", image_id="img-test", today="2026-12-02", data=data)
    calls = [s for s in seen if s[0] == "tc"]
    assert calls and all(c[1] == "InquiryPriceRunInstances" and c[2]["ImageId"] == "img-test" for c in calls)
    assert all("SID-test" in c[3] for c in calls)
    asked = {(c[2]["InstanceChargeType"], (c[2].get("InstanceChargePrepaid") or {}).get("Period")) for c in calls}
    assert asked == {("POSTPAID_BY_HOUR", None), ("PREPAID", 1), ("PREPAID", 12), ("SPOTPAID", None)}
    a10 = next(c[2] for c in calls if c[2]["InstanceType"] == "GNV4.3XLARGE44")
    assert a10["Placement"]["Zone"] in ("ap-guangzhou-6", "ap-guangzhou-7")  # a zone that sells A10
    assert any(f.startswith(TC_FAILS) and "AuthFailure.SignatureFailure" in f for f in res.failed)
    cat = catalog.load("tencentcloud", "ap-guangzhou", data)
    row = cat.get("instance/GNV4.3XLARGE44", "payg")
    assert (row.price, row.trade_price, row.quality) == (Decimal("15.95"), Decimal("3.33"), "vendor API")
    assert cat.get("instance/GNV4.3XLARGE44", "monthly").price == Decimal("8832")
    assert cat.get("instance/GNV4.3XLARGE44", "yearly").price == Decimal("736")
    assert cat.get("instance/GNV4.3XLARGE44", "spot").price == Decimal("15.95")
    assert ("instance-steps/GNV4.3XLARGE44", "payg") not in cat.rows  # all steps equal in that sample
    stepped = cat.get(f"instance-steps/{STEPPED}", "payg")
    factor = (96 * Decimal("0.2") + 264 * Decimal("0.12") + 370 * Decimal("0.1")) / (730 * Decimal("0.2"))
    assert stepped.price == (Decimal("0.15") * factor).quantize(Decimal("0.0001"))


def test_missing_credentials_and_bad_region(monkeypatch, data, project):
    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", raising=False)
    with pytest.raises(UserError, match="ALIBABA_CLOUD_ACCESS_KEY_ID"):
        refresh.refresh("alicloud", "cn-hangzhou", "127.0.0.1:9", "http", data=data)
    with pytest.raises(UserError, match="did you mean 'cn-hangzhou'"):
        refresh.refresh("alicloud", "cn-hangzou", data=data)


@pytest.mark.parametrize(
    "args, says",
    [
        # an endpoint no client can reach failed each instance type in turn, then exit 1 ("no price was written")
        (("alicloud", "cn-hangzhou", "exa mple:443"), "--endpoint: 'exa mple:443' is not HOST[:PORT]"),
        (("alicloud", "cn-hangzhou", "https://ecs.aliyuncs.com"), "--endpoint: 'https://ecs.aliyuncs.com' is not HOST"),
        (("alicloud", "cn-hangzhou", "127.0.0.1:99999"), "--endpoint: '127.0.0.1:99999' has a port that is not 1-65535"),
        (("alicloud", "cn-hangzhou", "bad_host!:80"), "--endpoint: 'bad_host!:80' is not an IP address or a host name"),
        # the credentials given where the endpoint goes were printed with it
        (("alicloud", "cn-hangzhou", "LTAI:SEKRET123X@ecs.aliyuncs.com"), "--endpoint: has credentials in it"),
        (("alicloud", "cn-hangzhou", "LTAI:SEKRET123X@ecs.aliyuncs.com:99999"), "--endpoint: has credentials in it"),
        (("alicloud", "cn-hangzhou", "ecs.aliyuncs.com/?token=SEKRET123X"), "--endpoint: 'ecs.aliyuncs.com/?***' is not"),
        # a leading space hid the user:password@ from the check, which then printed it (review finding 2)
        (("alicloud", "cn-hangzhou", " https://LTAI:SEKRET123X@ecs.aliyuncs.com"), "--endpoint: has credentials in it"),
        (("alicloud", "cn-hangzhou", "https:/LTAI:SEKRET123X@ecs.aliyuncs.com"), "--endpoint: has credentials in it"),
        # an @ in a query is no user name (finding 5): refused as what it is, the query not shown
        (("alicloud", "cn-hangzhou", "ecs.aliyuncs.com:443?x=a@SEKRET123X"), "--endpoint: 'ecs.aliyuncs.com:443?***' is not"),
        # --image-id is Tencent's: with alicloud it was ignored
        (("alicloud", "cn-hangzhou", None, "https", "img-x"), "--image-id: Tencent only"),
    ],
)
def test_refresh_refuses_a_bad_endpoint_or_image_before_asking(monkeypatch, args, says):
    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_ID", raising=False)  # refused before the credentials are looked at
    with pytest.raises(UserError) as exc:
        refresh.refresh(*args)
    assert says in str(exc.value) and "environment" not in str(exc.value) and "SEKRET123" not in str(exc.value)
