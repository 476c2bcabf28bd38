"""images/lock.json: which image id serves a recipe in a cloud and region, with the pins it was built with."""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from gpufleet import inputs, registry
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import write_atomic
from gpufleet.inputs import kind
from gpufleet.stacks import catalog
from gpufleet.stacks.project import (
    PROGRAM_DIR,
    RECIPES_DIR,
    SHIPPED_RECIPES,
    find_project,
    project_root,
    recipe_file,
    recipe_images,
    shown,
)


def lock_path() -> Path:
    """images/lock.json of the project (user state: read and written in the project root only)."""
    return project_root() / "images" / "lock.json"


def is_project_lock(path: Path) -> bool:
    """Whether `path` is the project's images/lock.json (False outside a project: a lock file given by --lock)."""
    try:
        return path == lock_path()
    except UserError:
        return False


class ImageRef(Struct, frozen=True):
    """A golden image of the lock file: recipe, cloud, region, id and pins."""

    recipe: str
    cloud: str
    region: str
    image_id: str
    pins: dict
    manifest_sha256: str | None
    placeholder: bool


# What to do when there is no lock file: the project's (a project made by hand, or one whose lock was removed) gets
# its first one from `image lock record`, or placeholders copied from a project `gpufleet init` made; another path is a
# file `image lock record --lock` wrote.
NO_LOCK = (
    "build an image and lock it with `gpufleet image lock record` (docs/images.md); to preview and cost before any image "
    "is built, copy images/lock.json from a project `gpufleet init --placeholder-images` made"
)
NO_LOCK_GIVEN = "give a lock file `gpufleet image lock record --lock` wrote"
# The lock's own comment, as `gpufleet init` and the first `image lock record` write it.
LOCK_COMMENT = (
    "Written after a build by `gpufleet image lock record`; read by the stacks (the module gpufleet.stacks.lock). "
    "Entries marked placeholder are not real images yet and record no pins."
)
# What a placeholder entry asks for before `pulumi up` (preview's note, region new, the program's refusal).
BUILD_AND_LOCK = "build and lock an image (gpufleet image build, gpufleet image lock record; docs/images.md)"


def absent(path: Path | None = None) -> str | None:
    """`does not exist; <fix>` when there is no lock file at `path` (default: the project's images/lock.json), else
    None (a link that leads nowhere is there: `load` names it). Said of the path, never read as an empty lock: preview
    said "no image of recipe R in lock.json (locked: none)" and `image lock show` printed an empty table."""

    path = path or lock_path()
    if os.path.lexists(path):
        return None
    return f"does not exist; {NO_LOCK if is_project_lock(path) else NO_LOCK_GIVEN}"


def load(path: Path | None = None, *, missing_ok: bool = False) -> dict:
    """The lock file (strictly read). A missing file is a UserError naming it (`absent`), or an empty lock with
    missing_ok (`image lock record` writing the first one); a malformed one is a UserError, and so is a link that
    leads nowhere (a loop, a moved target: path.exists() took it for no lock, and preview sent the user to build an
    image)."""

    path = path or lock_path()
    if why := absent(path):
        if missing_ok:
            return {"comment": LOCK_COMMENT, "images": {}}
        raise UserError([Problem(str(path), "", why)])
    shown = f"images/{path.name}" if is_project_lock(path) else str(path)
    try:
        doc = inputs.load_mapping(path, shown)
    except UserError as exc:  # `not valid JSON: Expecting value` for an empty lock said no fix (review F10)
        raise UserError(
            [p if "fix the link" in p.message else replace(p, message=f"{p.message}; {restore(path)}") for p in exc.problems]
        ) from None
    images = doc["images"] = inputs.mapping(doc.get("images", {}), shown, "images")
    problems = _unknown(doc, DOC_KEYS, shown, "")
    for recipe, entry in images.items():
        entry = inputs.mapping(entry, shown, f"images.{recipe}")
        problems += _unknown(entry, RECIPE_KEYS, shown, f"images.{recipe}.")
        pins = inputs.mapping(entry.get("pins", {}), shown, f"images.{recipe}.pins")
        problems += [
            Problem(shown, f"images.{recipe}.pins.{k}", f"is {inputs.kind(v)}: a pin is a version string")
            for k, v in pins.items()
            if not isinstance(v, str)
        ]
        for cloud, regions in inputs.mapping(entry.get("regions", {}), shown, f"images.{recipe}.regions").items():
            regions = inputs.mapping(regions, shown, f"images.{recipe}.regions.{cloud}")
            # a cloud or region no stack can name (regions.aws, alicloud.mars-1) was read silently (review F11)
            if why := registry.unknown(str(cloud)):
                problems.append(Problem(shown, f"images.{recipe}.regions.{cloud}", f"{why}; {RECORD}"))
                continue
            known = list(catalog.regions(str(cloud)))
            problems += [
                Problem(
                    shown,
                    f"images.{recipe}.regions.{cloud}.{region}",
                    f"{region!r} is not a region of stacks/data/{cloud}.yaml" + did_you_mean(str(region), known) + f"; {RECORD}",
                )
                for region in regions
                if region not in known
            ]
            for region, where in regions.items():
                at = f"images.{recipe}.regions.{cloud}.{region}"
                where = inputs.mapping(where, shown, at)
                problems += _unknown(where, ENTRY_KEYS, shown, f"{at}.")
                problems += [Problem(shown, f"{at}.{k}", m) for k, m in _entry_problems(cloud, where)]
    if problems:
        raise UserError(problems)
    return doc


def restore(path: Path) -> str:
    """The fix of a lock file that cannot be read: the project's is restored (without a copy, written again by `image
    lock record`); another is the file `--lock` names, which must be one `image lock record --lock` wrote."""
    if not is_project_lock(path):
        return NO_LOCK_GIVEN
    return (
        "restore images/lock.json from your copy of it (e.g. `git checkout -- images/lock.json`), or remove it and lock "
        "each image again with `gpufleet image lock record`: the stacks read their image ids from it"
    )


RECORD = "the lock holds what `gpufleet image lock record` writes: re-run it, or correct the hand edit"


# The keys `image lock record` writes (record below): a hand-edited key it does not know (a typo) was passed over.
DOC_KEYS = ("comment", "images")
RECIPE_KEYS = ("pins", "regions")
ENTRY_KEYS = ("image_id", "manifest_sha256", "placeholder")


def _unknown(doc: dict, known: tuple[str, ...], shown: str, at: str) -> list[Problem]:
    return [
        Problem(shown, f"{at}{k}", f"unknown key; the lock file holds {', '.join(known)}" + did_you_mean(str(k), list(known)))
        for k in doc
        if k not in known
    ]


def _entry_problems(cloud: str, where: dict) -> list[tuple[str, str]]:
    """(key, message) for each field of one region's entry that is not what `image lock record` writes."""

    out = []
    placeholder = where.get("placeholder", False)
    if not isinstance(placeholder, bool):
        out.append(("placeholder", f"is {kind(where['placeholder'])}: true or false"))
    image_id = where.get("image_id")
    if not isinstance(image_id, str) or not image_id.strip():
        out.append(("image_id", "missing, empty or not text: the cloud's image id (re-run `gpufleet image lock record`)"))
    elif cloud in registry.names() and (why := id_problem(cloud, image_id, placeholder is True)):
        # a hand edit: the id reaches the launch configuration as written (a newline, a NUL, another cloud's id)
        out.append(("image_id", f"{why}; re-run `gpufleet image lock record`"))
    sha = where.get("manifest_sha256")
    if sha is not None and not (isinstance(sha, str) and re.fullmatch(inputs.SHA256_HEX, sha)):
        out.append(("manifest_sha256", "not a sha256 (64 lowercase hex digits) or null"))
    return out


def _recipe_doc(recipe: str) -> tuple[Path, dict]:
    """The recipe's file (the project's, else the package's: project.recipe_file) and its mapping ({} when it cannot be
    read: for messages only)."""
    path = recipe_file(recipe)
    try:
        return path, inputs.load_mapping(path, shown(path))
    except (UserError, OSError):
        return path, {}


def recipe_regions(recipe: str) -> dict:
    """cloud -> the regions the recipe (the project's, else the package's: project.recipe_file) copies its image to ({}
    when it cannot be read: a message only)."""
    try:
        regions = _recipe_doc(recipe)[1].get("regions")
    except UserError:  # the lookup itself: the recipe's own load names it
        return {}
    return {c: list(rs) for c, rs in regions.items() if isinstance(rs, list)} if isinstance(regions, dict) else {}


def pipeline_shown() -> str:
    """The project's images program folder (images/program/, which `gpufleet init` writes) as messages name it."""
    root = find_project()
    return f"{PROGRAM_DIR}/ of the project" if root is None else shown(root / PROGRAM_DIR) + "/"  # no project: a --lock file


def add_region(recipe: str, cloud: str, region: str) -> str:
    """How to add `region` to the recipe's regions: in its file (the project's), or, for a shipped recipe, in the
    project's copy of it (a file of the installed package is not edited: the project's images/recipes/ shadows it),
    with its python_lock (the copy reads it from the project's images/)."""
    path, doc = _recipe_doc(recipe)
    if path.parent != SHIPPED_RECIPES:
        return f"add {region} to regions.{cloud} of the recipe ({shown(path)}), then "
    root = find_project()
    mine = f"the project's {RECIPES_DIR}/" if root is None else shown(root / RECIPES_DIR) + "/"
    lock = doc.get("python_lock")
    with_lock = ""
    if isinstance(lock, str) and lock:  # read from the images/ of the folder the copy is found in (recipe_images)
        theirs = shown(recipe_images(SHIPPED_RECIPES) / lock)
        into = f"the project's {lock}" if root is None else shown(recipe_images(root / RECIPES_DIR) / lock)
        with_lock = f" and its lock ({theirs}) to {into}"
    return (
        f"copy the recipe ({shown(path)}) into {mine}{with_lock} (a project's recipe of that name replaces the shipped "
        f"one) and add {region} to regions.{cloud} there, then "
    )


def image_for(recipe: str, cloud: str, region: str, path: Path | None = None) -> ImageRef | str:
    """The locked image, or a message saying what is missing and how to get it (the lock file itself, first)."""
    path = path or lock_path()
    if why := absent(path):
        return f"{path} {why}"
    entry = load(path)["images"].get(recipe)
    if entry is None:
        return (
            f"no image of recipe {recipe!r} in {path.name} (locked: {', '.join(sorted(load(path)['images'])) or 'none'}); "
            f"build one with `gpufleet image build --recipe {recipe} ...`; its image pipeline ({pipeline_shown()}) then "
            f"creates and copies it, and `gpufleet image lock record --recipe {recipe} ...` locks it (docs/images.md)"
        )
    where = entry.get("regions", {}).get(cloud, {}).get(region)
    if where is None:
        have = sorted(f"{c}/{r}" for c, rs in entry.get("regions", {}).items() for r in rs)
        return (
            f"no image of recipe {recipe!r} for {cloud} {region} in {path.name} (have: {', '.join(have) or 'none'}); "
            + ("" if region in recipe_regions(recipe).get(cloud, ()) else add_region(recipe, cloud, region))
            + f"re-run its image pipeline ({pipeline_shown()}, phase: image), which copies the image there, and lock "
            f"the copy's id with `gpufleet image lock record --recipe {recipe} ...` (docs/images.md)"
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


def unrecorded_problem(ref: ImageRef, shown: str = "images/lock.json") -> Problem | None:
    """A built (not placeholder) entry records the pins of its build, as `image lock record` writes them from the
    manifest; one that records none (a hand edit) would skip the check of the stack's recipe against the image."""
    if ref.placeholder or ref.pins:
        return None
    return Problem(
        shown,
        f"images.{ref.recipe}.regions.{ref.cloud}.{ref.region}",
        f"{ref.image_id} is not marked placeholder, but images.{ref.recipe}.pins records no pins, so the image cannot be "
        f"checked against recipe {ref.recipe}: lock the build with `gpufleet image lock record --recipe {ref.recipe} "
        f"--manifest build/images/{ref.recipe}-<host>.manifest.json --outputs OUT.json` (docs/images.md)",
    )


def rows(path: Path | None = None) -> list[ImageRef]:
    """Every locked image, sorted by recipe, cloud, region."""
    out = []
    for recipe, entry in sorted(load(path)["images"].items()):
        for cloud, regions in sorted(entry.get("regions", {}).items()):
            for region in sorted(regions):
                ref = image_for(recipe, cloud, region, path)
                assert isinstance(ref, ImageRef)
                out.append(ref)
    return out


# Image ids are the cloud's prefix (its profile's image_id_prefix) then lowercase letters and digits (Alibaba ECS `m-bp1g7004ksh0oeuco8gp`, Tencent CVM
# `img-9qabwvbn`; inner hyphens are let through): fullmatch, so `m-`, `m-1\nx`, `m-A` or a trailing newline are
# refused before they reach lock.json.
ID_BODY = re.compile(r"[0-9a-z]+(-[0-9a-z]+)*")


def id_problem(cloud: str, image_id: str, placeholder: bool) -> str | None:
    """Why `image_id` is not an image id of `cloud` (a registered one): `image lock record` refuses it, and a lock.json
    entry holding it (a hand edit) is refused when a stack reads it. Only a placeholder entry's id says placeholder."""

    prefix = registry.profile(cloud).image_id_prefix
    body = image_id[len(prefix) :] if image_id.startswith(prefix) else None
    if body is None or not ID_BODY.fullmatch(body) or ("placeholder" in image_id and not placeholder):
        shown = f"{image_id[:60]!r}{'…' if len(image_id) > 60 else ''}"
        article = "an" if cloud[:1] in "aeiou" else "a"
        return (
            f"{shown} is not {article} {cloud} image id (they are {prefix!r} then lowercase letters and digits, "
            "with single hyphens between them)"
        )
    return None


def manifest_problems(recipe, manifest: dict) -> list[tuple[str, str]]:
    """(field, message) for each reason the build manifest is not a build of this recipe as it is now: it must be the
    recipe's, with exactly the recipe's pins (a mapping of version strings)."""

    problems: list[tuple[str, str]] = []
    if "recipe" not in manifest:  # said "the manifest is of recipe None" (review F13)
        problems.append(("recipe", f"missing: a build manifest names its recipe ({recipe.name}); use one `image build` wrote"))
    elif manifest["recipe"] != recipe.name:
        problems.append(("recipe", f"the manifest is of recipe {inputs.given(manifest['recipe'])}, not {recipe.name!r}"))
    pins = manifest.get("pins") or {}
    if not isinstance(pins, dict):
        return [*problems, ("pins", f"is {kind(pins)}: the pins the build was made with, a mapping of pin to version string")]
    wrong = [(f"pins.{k}", f"is {kind(v)}: a pin is a version string") for k, v in pins.items() if not isinstance(v, str)]
    if wrong:
        return problems + wrong
    differ = sorted(k for k in set(pins) | set(recipe.pins) if pins.get(k) != recipe.pins.get(k))
    if differ:
        problems.append(
            (
                "pins",
                "the build's pins differ from the recipe: "
                + ", ".join(f"{k} built {pins.get(k, '(none)')}, recipe {recipe.pins.get(k, '(none)')}" for k in differ)
                + "; rebuild with the current recipe",
            )
        )
    return problems


def image_problems(recipe, images: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    """(where, message) for each reason these images (registered cloud -> region -> image id) may not be locked for
    this recipe: one lock entry describes one build everywhere, so every region the recipe copies its image to must get
    an id of that cloud's form, and no other region may."""

    problems: list[tuple[str, str]] = []
    for cloud, regions in sorted(images.items()):
        wanted = recipe.regions.get(cloud)
        if wanted is None:
            problems.append(
                (
                    cloud,
                    f"recipe {recipe.name} copies no image to {cloud} (its regions: "
                    f"{', '.join(sorted(recipe.regions)) or 'none'})",
                )
            )
            continue
        for region, image_id in sorted(regions.items()):
            if region not in wanted:
                problems.append((f"{cloud}/{region}", f"not among the recipe's {cloud} regions ({', '.join(wanted)})"))
            if why := id_problem(cloud, image_id, placeholder=False):
                problems.append((f"{cloud}/{region}", why))
    missing = sorted(f"{c}/{r}" for c, rs in recipe.regions.items() for r in rs if r not in images.get(c, {}))
    if missing:
        problems.append(
            (
                "images",
                f"no image id for {', '.join(missing)}: the recipe copies its image there "
                "(give each as --image CLOUD/REGION=ID, or take them from the images stack's outputs)",
            )
        )
    return problems


def region_entry(image_id: str, manifest_sha256: str | None, placeholder: bool) -> dict:
    """One region's entry of the lock, as `image lock record` and `gpufleet init --placeholder-images` write it."""
    return {"image_id": image_id, "manifest_sha256": manifest_sha256, "placeholder": placeholder}


def record(
    recipe: str,
    pins: dict,
    images: dict[str, dict[str, str]],
    manifest_sha256: str,
    path: Path | None = None,
    flag: str = "--lock",
    waiting: Callable[[Path], None] | None = None,
) -> dict:
    """Write the images of one build (cloud -> region -> image id) with its pins and manifest digest.

    All regions of the recipe are replaced together: one entry holds one build's pins. The file is
    replaced atomically, so a failed write leaves the old lock; a problem writing it names `flag`, the option that
    gives the lock file (`image lock record --lock`). Writers take turns: the read, change and write happen under an
    flock on `.<lock file>.lock` beside it (kept: removing it would let a second writer lock another file), so two
    records of different recipes at once both land; `waiting(guard)` is called when another holds it. The project's
    lock is the first record's to create, with its images/ folder (a project made by hand has none).
    """
    path = path or lock_path()
    if is_project_lock(path) and not os.path.isdir(path.parent):
        try:
            path.parent.mkdir()
        except OSError as exc:
            raise UserError([Problem(flag, str(path), f"cannot create its folder {path.parent}: {exc.strerror}")]) from None
    guard = path.with_name(f".{path.name}.lock")
    try:
        fd = os.open(guard, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UserError([Problem(flag, str(path), f"cannot create its lock file {guard}: {exc.strerror}")]) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting(guard)
            fcntl.flock(fd, fcntl.LOCK_EX)  # the kernel drops a crashed holder's lock
        return _record_locked(recipe, pins, images, manifest_sha256, path, flag)
    finally:
        os.close(fd)


def _record_locked(
    recipe: str, pins: dict, images: dict[str, dict[str, str]], manifest_sha256: str, path: Path, flag: str
) -> dict:
    doc = load(path, missing_ok=True)  # the first record of a project writes its lock
    doc.setdefault("images", {})[recipe] = {
        "pins": dict(sorted(pins.items())),
        "regions": {
            cloud: {region: region_entry(iid, manifest_sha256, placeholder=False) for region, iid in sorted(rs.items())}
            for cloud, rs in sorted(images.items())
        },
    }
    write_atomic(path, json.dumps(doc, indent=2) + "\n", flag=flag)
    return doc
