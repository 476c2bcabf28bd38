#!/usr/bin/env bash
# The wheel is the product: build it, install it into a fresh venv outside the checkout, and run a smoke set there
# against a copy of the project's user files (what a user has: Pulumi.yaml, stacks/, images/lock.json, cost/usage/).
# Fails when the wheel lacks a file of src/gpufleet/ or a command does not work from the installed package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-python3.11}

"$root/.venv/bin/pip" wheel -q --no-deps -w "$work/dist" "$root"
wheel=$(ls "$work"/dist/gpufleet-*.whl)

# 1. Every file of the package tree is in the wheel (no hand-kept lists; caches excluded).
"$root/.venv/bin/python" - "$root" "$wheel" <<'PY'
import subprocess, sys, zipfile
root, wheel = sys.argv[1], sys.argv[2]
tracked = subprocess.run(["git", "ls-files", "src/gpufleet"], cwd=root, capture_output=True, text=True, check=True)
want = {f.removeprefix("src/") for f in tracked.stdout.split()}
have = set(zipfile.ZipFile(wheel).namelist())
missing = sorted(want - have)
if missing:
    sys.exit("the wheel lacks " + ", ".join(missing))
print(f"wheel: {len(want)} package files, all present")
PY

# 2. A fresh venv outside the checkout, the locked dependencies, the wheel.
"$py" -m venv "$work/venv"
"$work/venv/bin/pip" install -q -c "$root/requirements-dev.lock" "$wheel" 2>&1 | grep -v "^WARNING: Location" || true
gf="$work/venv/bin/gpufleet"
mkdir -p "$work/project/images" "$work/project/cost"
cp "$root/Pulumi.yaml" "$work/project/"
cp -r "$root/stacks" "$work/project/stacks"
cp "$root/images/lock.json" "$work/project/images/"
cp -r "$root/cost/usage" "$work/project/cost/usage"
cd "$work/project"
where=$("$work/venv/bin/python" -c 'import gpufleet, sys; print(gpufleet.__file__)')
case "$where" in "$work/venv/"*) ;; *) echo "gpufleet imports from $where, not the wheel" >&2; exit 1 ;; esac

# 3. The smoke set.
"$gf" --version
"$work/venv/bin/python" -m gpufleet --version > /dev/null  # src/gpufleet/__main__.py
for stack in alicloud-cn-hangzhou-prod tencentcloud-ap-guangzhou-prod; do
  "$gf" preview --stack "$stack" --json > "$work/$stack.json"
  "$gf" cost estimate --stack "$stack" --json > /dev/null
done
"$gf" plan fit --stack alicloud-cn-hangzhou-prod > /dev/null
"$gf" image render -r cuda13-vllm --out-dir "$work/scripts" > /dev/null
ls "$work"/scripts/*.sh > /dev/null
"$gf" monitoring --stack alicloud-cn-hangzhou-prod --out-dir "$work/monitoring" > /dev/null
for f in gpufleet-llm-prod-alicloud-cn-hangzhou.rules.yml gpufleet-llm-prod-alicloud-cn-hangzhou.dashboard.json; do
  [ -s "$work/monitoring/$f" ] || { echo "gpufleet monitoring wrote no $f" >&2; exit 1; }
done
"$work/venv/bin/python" - <<'PY'
import importlib.util, io, sys, tempfile, zipfile
from pathlib import Path
from gpufleet.components.tencentcloud import autoscaler
data = autoscaler.scaler_zip()
names = zipfile.ZipFile(io.BytesIO(data)).namelist()
assert data and {"index.py", "signals.json"} <= set(names), names
with tempfile.TemporaryDirectory() as d:
    zipfile.ZipFile(io.BytesIO(data)).extractall(d)
    sys.path.insert(0, d)
    import index  # the handler imports from its own zip, standard library only
    assert callable(index.main_handler)
print(f"scaler zip: {len(data)} bytes, {names}, handler importable")
PY
# 4. Prices: the shipped catalogs are the release's (`catalog build` refuses, writing nothing); the project's
#    cost/catalog/ (what `catalog refresh` writes) wins over them.
set +e
"$gf" catalog build > "$work/build.out" 2>&1
rc=$?
set -e
if [ "$rc" != 2 ] || ! grep -q "installed at" "$work/build.out"; then cat "$work/build.out" >&2; exit 1; fi
"$work/venv/bin/python" - <<'PY'
from decimal import Decimal
from pathlib import Path
from gpufleet.cost import catalog
row = catalog.PriceRow("instance/ecs.gn7i-c8g1.2xlarge", "payg", Decimal("1.2345"), "CNY", "hour", "vendor API", "smoke", "2026-12-01")
cat = catalog.Catalog("alicloud", "cn-hangzhou", "CNY", "2026-12-01", "2026-12-01", {(row.key, row.billing): row})
Path("cost/catalog").mkdir()
catalog.write(cat, Path("cost/catalog/alicloud-cn-hangzhou.yaml"), "cost/catalog/alicloud-cn-hangzhou.yaml", catalog.PROJECT_HEADER)
PY
"$gf" cost estimate --stack alicloud-cn-hangzhou-prod --json | "$work/venv/bin/python" -c '
import json, sys
lines = [l for l in json.load(sys.stdin)["lines"] if l["price_key"] == "instance/ecs.gn7i-c8g1.2xlarge"]
assert lines and all((l["unit_price"], l["price_quality"]) == ("1.2345", "vendor API") for l in lines if l["billing"] == "payg"), lines
print("project prices: cost/catalog/ wins over the shipped catalog")'

# 5. Messages name the installed package's files where they are (not a checkout's src/gpufleet/).
set +e
"$gf" region new --cloud alicloud --region cn-shanghai --env dev --from nope.j2 --dry-run > "$work/region.out" 2>&1
rc=$?
set -e
if [ "$rc" != 2 ] || ! grep -q "/site-packages/gpufleet/stacks/templates/ (choose one of" "$work/region.out" \
  || grep -q "src/gpufleet" "$work/region.out"; then
  cat "$work/region.out" >&2; exit 1
fi

# 6. A project from the wheel alone (README "Your own project"): init, a stack, its offline preview and cost; the
#    images program in the project (images/program/), the shipped example images stack by name and a copy of it there;
#    a recipe of the project's (README "Before your first `pulumi up`") over the shipped one of its name.
fresh="$work/fresh"
env -u GPUFLEET_PROJECT "$gf" init "$fresh" --placeholder-images > /dev/null
(
  cd "$fresh"
  env -u GPUFLEET_PROJECT "$gf" region new --cloud tencentcloud --region ap-shanghai --env dev > /dev/null
  env -u GPUFLEET_PROJECT "$gf" preview --stack tencentcloud-ap-shanghai-dev --json > /dev/null
  env -u GPUFLEET_PROJECT "$gf" cost estimate --stack tencentcloud-ap-shanghai-dev --json > /dev/null
  for f in Pulumi.yaml __main__.py; do [ -s "images/program/$f" ] || { echo "init wrote no images/program/$f" >&2; exit 1; }; done
  grep -q "virtualenv: \"$work/venv\"" images/program/Pulumi.yaml || { cat images/program/Pulumi.yaml >&2; exit 1; }
  env -u GPUFLEET_PROJECT "$gf" image pipeline -s example-cuda13-vllm-alicloud --json > "$work/example.json"
  example=$("$work/venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["stack_file"])' "$work/example.json")
  case "$example" in "$work/venv/"*) ;; *) echo "the example images stack is $example, not the wheel's" >&2; exit 1 ;; esac
  cp "$example" images/program/Pulumi.mine.yaml
  env -u GPUFLEET_PROJECT "$gf" image pipeline -s mine --json > /dev/null
  shipped=$("$work/venv/bin/python" -c 'import gpufleet.images, os; print(os.path.dirname(gpufleet.images.__file__))')
  mkdir -p images/recipes images/locks
  cp "$shipped/recipes/cuda13-vllm.yaml" images/recipes/ && cp "$shipped/locks/cuda13-vllm.txt" images/locks/
  env -u GPUFLEET_PROJECT "$gf" image render -r cuda13-vllm --out-dir "$work/mine-scripts" > /dev/null
  env -u GPUFLEET_PROJECT "$gf" image pipeline -s mine > "$work/mine.out"
  grep -q "recipe file images/recipes/cuda13-vllm.yaml" "$work/mine.out" || { cat "$work/mine.out" >&2; exit 1; }
)
grep -q "virtualenv: \"$work/venv\"" "$fresh/Pulumi.yaml" || { cat "$fresh/Pulumi.yaml" >&2; exit 1; }
echo "init: a new project from the wheel previews and costs a new stack, previews an images stack, reads its own recipe"

# 7. init --examples: the example inputs the help names, from the wheel; the policy pack: without pulumi-policy it says
#    what to install, and with the extra (gpufleet[policy]) its policies load.
demo="$work/demo"
env -u GPUFLEET_PROJECT "$gf" init "$demo" --placeholder-images --examples > /dev/null
(
  cd "$demo"
  env -u GPUFLEET_PROJECT "$gf" preview --stack examples/Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml --json > /dev/null
  env -u GPUFLEET_PROJECT "$gf" region new --cloud alicloud --region cn-hangzhou --env prod > /dev/null
  env -u GPUFLEET_PROJECT "$gf" cost budget --by team --budgets examples/budgets-example.yaml --allow-unpriced > /dev/null
  env -u GPUFLEET_PROJECT "$gf" cost tokens --stack alicloud-cn-hangzhou-prod --from-loadtest examples/loadtest-example.json > /dev/null
  if "$work/venv/bin/python" policy/__main__.py 2> "$work/policy.err"; then echo "the policy pack ran without pulumi-policy" >&2; exit 1; fi
  grep -q "pip install 'gpufleet\[policy\]'" "$work/policy.err" || { cat "$work/policy.err" >&2; exit 1; }
)
"$work/venv/bin/pip" install -q -c "$root/requirements-dev.lock" "${wheel}[policy]" 2>&1 | grep -v "^WARNING: Location" || true
"$work/venv/bin/python" -c 'from gpufleet import policypack; print(f"policy pack: {len(policypack.policies())} policies")'

echo "wheel smoke: ok"
