"""Regenerate examples/loadtest-example.json: a SYNTHETIC load-test result for the README's `cost tokens` example.

It runs the real `gpufleet loadtest --stack alicloud-cn-hangzhou-prod` against the test suite's fake
OpenAI-compatible server (tests/sizing/fake_openai.py: 128 tokens per answer, 20 ms to the first token, then
0.5 ms per token times the requests in flight), so the numbers describe that fake server, not a GPU. It then marks
the file `"synthetic": true` with a note saying so. Run from the project root:

    .venv/bin/python scripts/make_loadtest_example.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpufleet import files

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "examples" / "loadtest-example.json"
NOTE = (
    "SYNTHETIC: measured by `gpufleet loadtest` against the test suite's fake server (tests/sizing/fake_openai.py: "
    "128 tokens per answer, 20 ms to the first token, then 0.5 ms per token times the requests in flight), made by "
    "scripts/make_loadtest_example.py. It shows the file format and feeds the worked example of `gpufleet cost tokens`; "
    "it says nothing about a real GPU. Measure your own node with `gpufleet loadtest --stack S --save-json FILE`."
)


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "sizing"))
    from fake_openai import Behaviour, FakeServer

    behaviour = Behaviour(model="Qwen/Qwen2.5-7B-Instruct", tokens=128, first_token_s=0.02, token_s=0.0005)
    with FakeServer(behaviour) as srv:
        cmd = [sys.executable, "-c", "from gpufleet.cli import main; main()", "loadtest", "--url", srv.url]
        cmd += ["--model", behaviour.model, "--stack", "alicloud-cn-hangzhou-prod", "--concurrency", "1,4,16,32"]
        cmd += ["--requests", "64", "--max-tokens", "128", "--slo-p95-ms", "1500", "--save-json", str(OUT)]
        subprocess.run(cmd, check=True, cwd=ROOT)
    result = json.loads(OUT.read_text())
    result = {"synthetic": True, "note": NOTE, **result, "url": "http://127.0.0.1:PORT (the fake server)"}
    files.write_atomic(OUT, json.dumps(result, indent=2) + "\n", shown=str(OUT.relative_to(ROOT)))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
