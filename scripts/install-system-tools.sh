#!/usr/bin/env bash
# The one place where the system packages the tests use are installed (Debian; run as root).
# .ci/run calls it; on a machine without them the tests that need them skip and say why.
#   openssh-server   a real sshd on 127.0.0.1 for the image runner (Fabric)
#   shellcheck       the node and image scripts
#   systemd          systemd-analyze verify / security for the units
#   chromium         the HTML cost report rendered headless
#   nginx            the node gateway config (nginx -t) and its behaviour on 127.0.0.1
#   prometheus       promtool check rules for the alerting rules and dashboard queries
#   systemd-container, debootstrap   the node boot test (a real systemd + cloud-init in systemd-nspawn)
#   cloud-init       cloud-init schema for the rendered user-data
#   logrotate        logrotate -d on the gateway access-log rotation
#   gpg              the apt keyring fingerprint checks (tests/images/test_keyring.py)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  openssh-server shellcheck systemd chromium nginx prometheus logrotate systemd-container debootstrap gpg > /dev/null
apt-get install -y -qq --no-install-recommends cloud-init > /dev/null
mkdir -p /run/sshd
