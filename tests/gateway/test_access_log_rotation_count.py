"""The access log keeps logs.access_log_keep_days rotated files, as logrotate itself counts them.

logrotate(8), `rotate count`: "Log files are rotated count times before being removed"; the file rotates `daily`, so
count = the days kept. Run here for real (-f forces each rotation): keep 3 days and a size cap of 7 MiB (a number that
must not be read as a count), 5 rotations leave exactly 3 old files.
"""

from __future__ import annotations

import subprocess

from conftest import values
from tools import require

from gpufleet.images import gateway


def test_five_forced_rotations_keep_exactly_the_days_kept(tmp_path):
    logrotate = require("logrotate")
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o755)
    log = logs / "gateway-access.log"
    conf = tmp_path / "gpufleet-gateway"
    v = values(access_log_keep_days=3, access_log_max_mib=7)
    conf.write_text(gateway.render(v, access_log=str(log), pid_file=str(tmp_path / "no-nginx.pid"))["logrotate"])
    for i in range(5):
        log.write_text(f"request {i}\n")
        r = subprocess.run(
            [logrotate, "-f", "-s", str(tmp_path / "state"), str(conf)], capture_output=True, text=True, timeout=30
        )
        assert r.returncode == 0, r.stdout + r.stderr
    rotated = sorted(p.name for p in logs.iterdir() if p.name != log.name)
    # delaycompress: the newest old file stays plain, the older ones are gzipped
    assert rotated == ["gateway-access.log.1", "gateway-access.log.2.gz", "gateway-access.log.3.gz"]
