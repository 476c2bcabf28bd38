"""`gpufleet preview` warns when the stack's image is a placeholder in images/lock.json (no image built yet)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPUFLEET = str(Path(sys.executable).parent / "gpufleet")


def test_preview_notes_a_placeholder_image():
    out = subprocess.run(
        [GPUFLEET, "preview", "--stack", "alicloud-cn-hangzhou-dev", "--json"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    notes = json.loads(out.stdout)["notes"]
    hits = [n for n in notes if "placeholder" in n and "images/lock.json" in n]
    assert len(hits) == 1 and "gpufleet image build" in hits[0]


def test_the_loader_carries_the_lock_entrys_placeholder_flag():
    from gpufleet import validation
    from gpufleet.stacks.lock import image_for

    fleet = validation.load_fleet("alicloud-cn-hangzhou-dev", ROOT)
    entry = image_for(fleet.spec.image.recipe, fleet.spec.cloud, fleet.spec.region)
    assert fleet.image_placeholder is entry.placeholder is True
