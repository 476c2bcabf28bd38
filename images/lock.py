"""images/lock.json: which image id serves a recipe in a cloud and region, with the pins it was built with."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

LOCK = Path(__file__).parent / "lock.json"


@dataclass(frozen=True)
class ImageRef:
    recipe: str
    cloud: str
    region: str
    image_id: str
    pins: dict
    manifest_sha256: str | None
    placeholder: bool


def load(path: Path = LOCK) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"images": {}}


def image_for(recipe: str, cloud: str, region: str, path: Path = LOCK) -> ImageRef | str:
    """The locked image, or a message saying what is missing and how to get it."""
    entry = load(path)["images"].get(recipe)
    if entry is None:
        return f"no image of recipe {recipe!r} in {path.name}; build one with `gpufleet image build --recipe {recipe} ...`"
    where = entry.get("regions", {}).get(cloud, {}).get(region)
    if where is None:
        have = sorted(f"{c}/{r}" for c, rs in entry.get("regions", {}).items() for r in rs)
        return (
            f"no image of recipe {recipe!r} for {cloud} {region} in {path.name} (have: {', '.join(have) or 'none'}); "
            f"copy one there with `gpufleet image copy --recipe {recipe} --cloud {cloud} --region {region}` or build it there"
        )
    return ImageRef(
        recipe=recipe,
        cloud=cloud,
        region=region,
        image_id=where["image_id"],
        pins=entry.get("pins", {}),
        manifest_sha256=where.get("manifest_sha256"),
        placeholder=bool(where.get("placeholder", False)),
    )
