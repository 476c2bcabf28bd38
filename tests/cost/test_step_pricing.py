"""Tencent's pay-as-you-go step pricing (doc 213/2176): applied only to a family the vendor names as qualifying."""

import shutil
from decimal import Decimal
from pathlib import Path

import yaml

from gpufleet.cost import catalog, derive

DATA = Path(catalog.__file__).parent / "data"


def test_month_factor_of_a_qualifying_type_running_all_month():
    steps = derive.load_steps("tencentcloud")
    # 96 h at 100 %, 264 h at 50 %, 370 h at 34 %, over 730 h
    assert derive.step_month_factor(steps) == (96 + 264 * Decimal("0.5") + 370 * Decimal("0.34")) / 730
    assert derive.step_month_factor(steps, Decimal(50)) == 1  # inside the first step
    assert derive.step_month_factor(steps, Decimal(200)) == (96 + 104 * Decimal("0.5")) / 200


def test_no_gpu_family_qualifies_so_no_step_rows_and_every_payg_row_says_so():
    cat = catalog.load("tencentcloud", "ap-guangzhou")
    assert not [k for k in cat.rows if k[0].startswith("instance-steps/")]
    payg = [r for (k, b), r in cat.rows.items() if k.startswith("instance/") and b == "payg" and r.price is not None]
    assert payg and all("vendor names no qualifying family" in r.derivation for r in payg)
    assert not [r for r in catalog.load("alicloud", "cn-hangzhou").rows.values() if "step pricing" in r.derivation]


def test_a_family_named_as_qualifying_gets_its_step_row(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    f = data / "step-pricing-tencentcloud.yaml"
    doc = yaml.safe_load(f.read_text())
    doc["qualifying_families"] = ["GN7"]
    f.write_text(yaml.safe_dump(doc))
    cat = derive.derive("tencentcloud", "ap-guangzhou", "2026-12-03", data)
    step = cat.rows[("instance-steps/GN7.2XLARGE32", "payg")]
    payg = cat.rows[("instance/GN7.2XLARGE32", "payg")]
    assert step.price == (payg.price * derive.step_month_factor(doc)).quantize(Decimal("0.0001"))
    assert "GN7 qualifies" in payg.derivation
    assert ("instance-steps/GNV4.3XLARGE44", "payg") not in cat.rows
