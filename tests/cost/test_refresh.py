"""`catalog refresh` through the vendors' real SDKs against a fake pricing endpoint on 127.0.0.1."""

import json
import shutil
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from gpufleet.cost import catalog, refresh

from gpufleet.errors import UserError

FIX = Path(__file__).parent / "fixtures"


@pytest.fixture
def fake():
    ali = json.loads((FIX / "describe_price.json").read_text())
    tc = json.loads((FIX / "inquiry_price.json").read_text())
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            status = 200
            if self.headers.get("X-TC-Action"):
                req = json.loads(body)
                seen.append(("tc", self.headers["X-TC-Action"], req, self.headers.get("Authorization", "")))
                if req["InstanceType"] == "GN10X.2XLARGE40":
                    out = tc["error"]
                else:
                    out = tc["prepaid"] if req["InstanceChargeType"] == "PREPAID" else tc["hourly"]
            else:
                q = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                q.update({k: v[0] for k, v in parse_qs(body.decode()).items()})
                seen.append(
                    ("ali", self.headers.get("x-acs-action") or q.get("Action"), q, self.headers.get("Authorization", ""))
                )
                if q.get("InstanceType") == "ecs.gn7-c12g1.3xlarge":
                    out, status = ali["not_sold"], 400
                else:
                    out = ali["ok"]
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
    for p in catalog.DATA.glob("*-*.yaml"):
        shutil.copy(p, tmp_path / p.name)
    return tmp_path


def test_alicloud_describe_price(fake, data, monkeypatch):
    endpoint, seen = fake
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "AKID-test")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "secret-test")
    res = refresh.refresh("alicloud", "cn-hangzhou", endpoint, "http", today="2026-12-02", data=data)
    calls = [s for s in seen if s[0] == "ali"]
    assert calls and all(c[1] == "DescribePrice" and c[2]["RegionId"] == "cn-hangzhou" for c in calls)
    assert all("AKID-test" in c[3] for c in calls)  # signed with the user's key
    assert {c[2]["PriceUnit"] for c in calls} == {"Hour", "Month", "Year"}
    assert any(c[2].get("SpotStrategy") == "SpotAsPriceGo" for c in calls)
    assert any("ecs.gn7-c12g1.3xlarge" in f and "NotSupported" in f for f in res.failed)
    cat = catalog.load("alicloud", "cn-hangzhou", data)
    row = cat.get("instance/ecs.gn7i-c8g1.2xlarge", "payg")
    assert (
        row.quality == "vendor API"
        and row.price == Decimal("9.2")
        and row.trade_price == Decimal("8.28")
        and row.as_of == "2026-12-02"
    )
    assert cat.get("instance/ecs.gn7i-c8g1.2xlarge", "yearly").price == (Decimal("9.2") / 12).quantize(Decimal("0.0001"))
    assert cat.get("instance/ecs.gn7-c12g1.3xlarge", "payg").quality == "missing"  # left as it was
    assert cat.get("disk/cloud_essd/PL1", "payg").quality == "official"  # untouched rows stay
    # a later `catalog build` keeps the vendor API rows
    from gpufleet.cost import derive

    derive.build("alicloud", "2026-12-03", data)
    assert catalog.load("alicloud", "cn-hangzhou", data).get("instance/ecs.gn7i-c8g1.2xlarge", "payg").quality == "vendor API"


def test_tencent_inquiry_price(fake, data, monkeypatch):
    endpoint, seen = fake
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "SID-test")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "key-test")
    res = refresh.refresh("tencentcloud", "ap-guangzhou", endpoint, "http", image_id="img-test", today="2026-12-02", data=data)
    calls = [s for s in seen if s[0] == "tc"]
    assert calls and all(c[1] == "InquiryPriceRunInstances" and c[2]["ImageId"] == "img-test" for c in calls)
    assert all("SID-test" in c[3] for c in calls)
    a10 = next(c[2] for c in calls if c[2]["InstanceType"] == "GNV4.3XLARGE44")
    assert a10["Placement"]["Zone"] in ("ap-guangzhou-6", "ap-guangzhou-7")  # a zone that sells A10
    assert any(f.startswith("GN10X.2XLARGE40") for f in res.failed)
    cat = catalog.load("tencentcloud", "ap-guangzhou", data)
    assert cat.get("instance/GN7.2XLARGE32", "payg").price == Decimal("8.7")
    assert cat.get("instance/GN7.2XLARGE32", "payg").trade_price == Decimal("7.83")
    assert cat.get("instance/GN7.2XLARGE32", "monthly").price == Decimal("2500")
    assert cat.get("instance/GN7.2XLARGE32", "yearly").price == (Decimal("2500") / 12).quantize(Decimal("0.0001"))
    assert cat.get("instance/GN7.2XLARGE32", "monthly").quality == "vendor API"


def test_missing_credentials_and_bad_region(monkeypatch, data):
    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", raising=False)
    with pytest.raises(UserError, match="ALIBABA_CLOUD_ACCESS_KEY_ID"):
        refresh.refresh("alicloud", "cn-hangzhou", "127.0.0.1:9", "http", data=data)
    with pytest.raises(UserError, match="did you mean 'cn-hangzhou'"):
        refresh.refresh("alicloud", "cn-hangzou", data=data)
