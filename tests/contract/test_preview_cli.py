"""`gpufleet preview` refuses what the provider refuses: exit 2, the spec field, the rule's citation, no traceback."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "images").mkdir()
    shutil.copy(ROOT / "images" / "lock.json", tmp_path / "images" / "lock.json")  # user state: read from the project root
    return tmp_path


def _preview(project: Path, stack: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUFLEET_PROJECT": str(project), "GPUFLEET_NOW": "2026-12-01T00:00:00Z", "COLUMNS": "400"}
    gpufleet = Path(sys.executable).with_name("gpufleet")
    return subprocess.run([str(gpufleet), "preview", "--stack", stack], capture_output=True, text=True, env=env, timeout=120)


def test_an_expired_schedule_window_is_refused_with_the_citation(tmp_path):
    project = _project(tmp_path)
    path = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    text = path.read_text()
    assert "      drain_timeout_s: 660\n" in text
    path.write_text(
        text.replace("      drain_timeout_s: 660\n", "      drain_timeout_s: 660\n      schedule_window_start: 2025-06-01\n")
    )
    result = _preview(project, "alicloud-cn-hangzhou-prod")
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert "fleet.autoscaling.schedule_window_start" in out and "recurrence_end_time" in out
    assert "ess_scheduled_task.html.markdown" in out and "Traceback" not in out


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    from gpufleet.cli import main

    capsys.readouterr()
    code = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_tree_heads_with_the_stacks_billing_and_notes_each_schedule_window(project, capsys, monkeypatch):
    """prod on spot with its schedule window stored (started 2025-12-20, so it ends 364 days later, on 2026-12-19:
    docs/provider-contract.md's default schedule_window_days), previewed on 2026-12-01 (a Tuesday): the first line
    says the stack file's billing, and each schedule's next firing is noted (the weekday cron 0 1 * * 1-5 fires that
    day at 01:00, the daily 0 14 * * * at 14:00; Alibaba's cron zone is UTC), with the warning due from 30 days before
    the window ends (18 days here)."""
    monkeypatch.setenv("GPUFLEET_NOW", "2026-12-01T00:00:00Z")
    monkeypatch.setenv("COLUMNS", "400")
    path = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    text = path.read_text()
    assert "    billing: {model: payg}\n" in text and "      drain_timeout_s: 660\n" in text
    text = text.replace("    billing: {model: payg}\n", "    billing: {model: spot, on_demand_base: 2}\n")
    path.write_text(
        text.replace("      drain_timeout_s: 660\n", "      drain_timeout_s: 660\n      schedule_window_start: 2025-12-20\n")
    )
    code, out, err = _run(["preview", "--stack", "alicloud-cn-hangzhou-prod"], capsys)
    assert code == 0, err
    head = out.splitlines()[0]
    assert head.startswith("alicloud-cn-hangzhou-prod  alicloud cn-hangzhou  2-8x ") and head.endswith(
        " (1x A10)  billing spot"
    ), head
    notes = [" ".join(line.split()) for line in out.split("\nnote ")[1:]]
    for name, first in (
        ("business-day ('0 1 * * 1-5' UTC)", "2026-12-01 01:00"),
        ("night ('0 14 * * *' UTC)", "2026-12-01 14:00"),
    ):
        # Alibaba's zone is UTC: the time once (it read `{first} UTC = {first} UTC`)
        assert f"schedule {name}: next firing {first} UTC; window ends 2026-12-19" in notes, name
    for name in ("business-day", "night"):
        assert f"WARNING schedule {name}: its window ends 2026-12-19 (in 18 days); renew: set " in "\n".join(notes), name


def test_a_pem_config_value_that_is_a_number_is_refused_before_the_preview(project, capsys):
    """docs/tls.md: certificate_config names a Pulumi config key holding the chain, plain (PEM text) or secret; a
    number is neither (it was noted as opaque secret config and previewed): exit 2 naming the field."""
    path = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    text = path.read_text()
    tls = "      tls: {domain: llm.example.com, certificate_id: 1234567890123456_example, cipher_policy: tls1.2-strict, redirect_http: true}\n"
    assert tls in text and "  gpufleet:fleet:\n" in text
    text = text.replace(
        tls,
        "      tls: {domain: llm.example.com, certificate_config: 'gpufleet:tlsCertificate', private_key_config: 'gpufleet:tlsKey'}\n",
    )
    path.write_text(
        text.replace(
            "  gpufleet:fleet:\n",
            "  gpufleet:tlsCertificate: 5\n  gpufleet:tlsKey: {secure: v1:AAAAexampleciphertext}\n  gpufleet:fleet:\n",
        )
    )
    code, out, err = _run(["preview", "--stack", "alicloud-cn-hangzhou-prod", "--json"], capsys)
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert "fleet.load_balancer.tls.certificate_config" in err and "is a number" in err, err
