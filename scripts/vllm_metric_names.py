"""Write the /metrics names a vLLM wheel exports, read from its source (no install): the list monitoring checks
its PromQL against (components/data/metric_names.yaml, key vllm.<version>).

    pip download --no-deps vllm==0.33.0 -d /tmp/w && python scripts/vllm_metric_names.py /tmp/w/vllm-0.33.0-*.whl

Reads vllm/v1/metrics/loggers.py (the V1 engine's Prometheus logger, the default engine in 0.10 and later) and
prints YAML: for each metric, its type and the file:line it is declared at. Exposition names follow
prometheus_client: a counter is exported with `_total`, a histogram as `_bucket`, `_sum`, `_count`.
"""

from __future__ import annotations

import re
import sys
import zipfile

FILE = "vllm/v1/metrics/loggers.py"
DECL = re.compile(r"(_gauge_cls|_counter_cls|_histogram_cls|Gauge|Counter|Histogram)\(\s*name=\"(vllm:[a-z0-9_:]+)\"")
KINDS = {"_gauge_cls": "gauge", "_counter_cls": "counter", "_histogram_cls": "histogram"}


def names(wheel: str) -> dict[str, dict]:
    text = zipfile.ZipFile(wheel).read(FILE).decode()
    out = {}
    for m in DECL.finditer(text):
        kind = KINDS.get(m.group(1), m.group(1).lower())
        out[m.group(2)] = {"type": kind, "at": f"{FILE}:{text.count(chr(10), 0, m.start()) + 1}"}
    return out


def main() -> None:
    wheel = sys.argv[1]
    version = re.search(r"vllm-([0-9.]+)-", wheel).group(1)
    print(f"  {version!r}:")
    print(f"    source: PyPI wheel {wheel.rsplit('/', 1)[-1]}, {FILE}")
    print("    metrics:")
    for name, facts in sorted(names(wheel).items()):
        print(f"      {name!r}: {{type: {facts['type']}, at: {facts['at']!r}}}")


if __name__ == "__main__":
    main()
