"""A bill line matched to a declared resource by name is that resource's cost even when its product names no category.

finance/reconcile.py module doc: "a bill line matched to a resource holds the whole resource", compared in the
resource's category. Here the example Alibaba bill gains a 10.00 line named after the prod nodes
(llm-cn-hangzhou-prod-asg-node) whose product, Security Center (云安全中心), is in no category's words: by hand, the
nodes' group gpu_compute + disk is billed 9980.55 + 9050.10 + 10.00 = 19040.65 and nothing is "other".
"""

import csv
import io
from decimal import Decimal
from pathlib import Path

from gpufleet.finance import reconcile

ROOT = Path(__file__).resolve().parents[2]
ALI = ROOT / "examples" / "bill-alicloud-example.csv"


def test_an_unknown_product_on_a_node_is_the_nodes_cost(tmp_path):
    rows = list(csv.reader(io.StringIO(ALI.read_text(encoding="utf-8"))))
    head = rows[0]
    node = next(r for r in rows[1:] if r[head.index("ProductCode")] == "ecs")
    extra = list(node)
    extra[head.index("ProductCode")], extra[head.index("ProductName")] = "sas", "云安全中心"
    extra[head.index("ProductDetail")] = "主机安全-按量付费"
    extra[head.index("PretaxGrossAmount")] = extra[head.index("PretaxAmount")] = "10.00"
    path = tmp_path / "bill.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([*rows, extra])
    r = reconcile.run("alicloud-cn-hangzhou-prod", path)
    assert r.categories["gpu_compute + disk"].bill == Decimal("9980.55") + Decimal("9050.10") + Decimal("10.00")
    assert "other" not in r.categories or r.categories["other"].bill == 0
    res = {m.resource: m for m in r.resources}
    assert res["llm-prod-asg-config"].bill == Decimal("19040.65")
