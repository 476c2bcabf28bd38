#!/usr/bin/env bash
# mypy over the installed package `gpufleet` (every module: cli, stacks, components, images, cost, sizing).
# The repository maps top-level folders into one package (pyproject [tool.setuptools] package-dir), which mypy
# cannot read from the tree, and the editable install is an import hook mypy does not follow; so this lays the
# package out as links in a temporary folder and checks `-p gpufleet` there. Config: [tool.mypy] in pyproject.toml.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/gpufleet"
for f in "$root"/gpufleet/*; do ln -s "$f" "$tree/gpufleet/"; done
for d in stacks components images cost sizing simulate; do ln -s "$root/$d" "$tree/gpufleet/$d"; done
cd "$tree"
exec "$root/.venv/bin/mypy" --config-file "$root/pyproject.toml" -p gpufleet "$@"
