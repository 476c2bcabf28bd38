"""A rollout against two local stand-in groups, to see `gpufleet rollout` work without a cloud (the README's output).

A TEST SETUP: the two "groups" are tests/sizing/fake_openai.py servers on 127.0.0.1 (OpenAI-compatible, vLLM's
/metrics and /health, deterministic answers), not vLLM. The stack is the shipped
examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml copied into a temporary folder (shown as /tmp/rollout-demo);
nothing in the project changes. The Pulumi CLI is not used: the printed `pulumi up` is what you would run.

    .venv/bin/python scripts/rollout_demo.py            # a good canary: start, then one step (0 -> 5 %)
    .venv/bin/python scripts/rollout_demo.py --drift    # a candidate that words some answers differently: rolled back
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "sizing"))
from fake_openai import Behaviour, FakeServer, default_answer  # noqa: E402

CURRENT, CANDIDATE = "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-8B"


def drifted(prompt: str) -> str:
    text = default_answer(prompt)
    return text.replace("words long", "words in length") if len(prompt) % 3 == 0 else text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drift", action="store_true", help="the candidate words some answers differently")
    args = ap.parse_args()
    gf = str(Path(sys.executable).parent / "gpufleet")
    common = {"tokens": 8, "first_token_s": 0.05, "token_s": 0.005}
    cand_kw = {"answer": drifted} if args.drift else {}
    with (
        FakeServer(Behaviour(model=CURRENT, **common)) as cur,
        FakeServer(Behaviour(model=CANDIDATE, **common, **cand_kw)) as cand,
        tempfile.TemporaryDirectory() as tmp,
    ):
        stack = Path(tmp) / "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml"
        stack.write_text((ROOT / "examples" / stack.name).read_text())
        env = {**os.environ, "COLUMNS": "150", "NO_COLOR": "1"}
        gates = [
            "--current-url", cur.url, "--candidate-url", cand.url,
            "--current-metrics-url", f"{cur.url}/metrics", "--candidate-metrics-url", f"{cand.url}/metrics",
            "--requests", "40", "--concurrency", "4",
        ]  # fmt: skip
        shown = {tmp: "/tmp/rollout-demo", str(ROOT): "~/gpufleet"}
        for argv in (["rollout", "start", "--stack", str(stack)], ["rollout", "step", "--stack", str(stack), *gates]):
            line = shlex.join(["gpufleet", *argv])
            for old, new in shown.items():
                line = line.replace(old, new)
            print(f"$ {line}")
            done = subprocess.run([gf, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
            out = done.stderr + done.stdout
            for old, new in shown.items():
                out = out.replace(old, new)
            print(out.rstrip() + (f"\n(exit {done.returncode})" if done.returncode else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
