"""The scaler function's code package: index.py and signals.json (the signals' vLLM names and scale from
components/data/scaling_metrics.yaml, the node-read timeout from images/node_agent.yaml), zipped byte-for-byte the
same on every run so the program's preview and `pulumi up` see no change unless the code changes."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import yaml

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
HANDLER = "index.main_handler"  # the SCF handler: file index.py, function main_handler


def signals() -> dict:
    sm = yaml.safe_load((ROOT / "components" / "data" / "scaling_metrics.yaml").read_text())
    agent = yaml.safe_load((ROOT / "images" / "node_agent.yaml").read_text())
    return {"metrics": sm["metrics"], "http_timeout_s": agent["http_timeout_s"]}


def files() -> dict[str, bytes]:
    return {
        "index.py": (HERE / "index.py").read_bytes(),
        "signals.json": (json.dumps(signals(), indent=1, sort_keys=True) + "\n").encode(),
    }


def zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in sorted(files().items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()
