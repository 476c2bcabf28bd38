"""The scaler function's code package: index.py and signals.json (the signals' vLLM names and scale from
images/data/scaling_metrics.yaml, the node-read timeout from images/node_agent.yaml), zipped byte-for-byte the
same on every run so the program's preview and `pulumi up` see no change unless the code changes."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from gpufleet.images import agent_settings, scaling_signals

HERE = Path(__file__).parent
HANDLER = "index.main_handler"  # the SCF handler: file index.py, function main_handler


def signals() -> dict:
    return {"metrics": scaling_signals.raw()["metrics"], "http_timeout_s": agent_settings.load()["http_timeout_s"]}


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
