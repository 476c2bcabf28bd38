#!/usr/bin/env bash
# mypy over the whole package `gpufleet` in src/ (every module: cli, stacks, components, images, cost, sizing).
# Config: [tool.mypy] in pyproject.toml.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/src"
exec "$root/.venv/bin/mypy" --config-file "$root/pyproject.toml" -p gpufleet "$@"
