"""Where the user's project is: the folder whose user state (stacks/, images/lock.json, cost/usage/) gpufleet reads, and
the image recipes found from it (its images/recipes/, then the package's)."""

from __future__ import annotations

import os
from pathlib import Path

from gpufleet.errors import Problem, UserError
from gpufleet.files import package_file


def is_project(folder: Path) -> bool:
    """A gpufleet project: Pulumi.yaml beside stacks/ (what project_root looks for, and `gpufleet init` writes)."""
    return (folder / "Pulumi.yaml").exists() and (folder / "stacks").is_dir()


def project_root(start: Path | None = None) -> Path:
    """The folder holding Pulumi.yaml and stacks/: $GPUFLEET_PROJECT, else up from the cwd.

    User state (stacks, images/lock.json, cost/usage/) is read from here only; outside a project this is a
    UserError, never the package's own folder (an installed gpufleet would otherwise read and write site-packages).
    """
    if os.environ.get("GPUFLEET_PROJECT"):
        given = Path(os.environ["GPUFLEET_PROJECT"])
        if not os.path.isdir(given):  # else its stacks read as missing and its lock as empty (os.path: False on OSError)
            what = "is a file" if os.path.lexists(given) else "does not exist"
            raise UserError(
                [
                    Problem(
                        "GPUFLEET_PROJECT",
                        "",
                        f"{given}: {what}: set it to the project's folder (the one holding Pulumi.yaml and stacks/), "
                        "or unset it to find the project from the current folder",
                    )
                ]
            )
        return given
    try:
        cwd = start or Path.cwd()
    except OSError:  # the shell's current folder was removed (getcwd fails)
        raise UserError(
            [Problem("current folder", "", "no longer exists: cd into the project folder, or set GPUFLEET_PROJECT")]
        ) from None
    here = cwd.resolve()
    for folder in (here, *here.parents):
        if is_project(folder):
            return folder
    raise UserError(
        [
            Problem(
                str(cwd),
                "",
                f"no Pulumi.yaml with stacks/ found from {cwd}; run inside a gpufleet project or set GPUFLEET_PROJECT "
                "(`gpufleet init DIR` makes a new one)",
            )
        ]
    )


def find_project() -> Path | None:
    """The project as project_root finds it; None outside any project (where only what the package ships exists)."""
    try:
        return project_root()
    except UserError:
        return None


# The image recipes the package ships (gpufleet/images/recipes/). A project's images/recipes/<name>.yaml comes first: a
# recipe of its own, or a copy of a shipped one of the same name that shadows it (how a user fills in its pins).
SHIPPED_RECIPES = Path(__file__).resolve().parent.parent / "images" / "recipes"


def recipe_folders() -> tuple[Path, ...]:
    """Where a recipe is looked up by name, in order: the project's images/recipes/ (found as project_root finds the
    project; it may hold none), then the package's shipped recipes. Outside a project, the shipped ones alone."""
    root = find_project()
    return (SHIPPED_RECIPES,) if root is None else ((root / "images" / "recipes").resolve(), SHIPPED_RECIPES)


def recipe_files(folders: tuple[Path, ...] | None = None) -> dict[str, Path]:
    """Recipe name -> its file, for every recipe of `folders` (default: recipe_folders()), sorted by name: the first
    folder's file of a name shadows the later ones'."""
    found: dict[str, Path] = {}
    for folder in reversed(folders or recipe_folders()):
        found.update((p.stem, p) for p in folder.glob("*.yaml"))
    return dict(sorted(found.items()))


def recipe_file(name: str, folders: tuple[Path, ...] | None = None) -> Path:
    """The file of the recipe `name` (a recipe name, not a path: one path component, checked by the caller): the first
    of `folders` (default: recipe_folders()) that holds <name>.yaml; when none does, the first folder's <name>.yaml,
    which does not exist (where a project recipe of that name would be)."""
    folders = folders or recipe_folders()
    for folder in folders:
        if os.path.isfile(folder / f"{name}.yaml"):  # os.path: False on any OSError (a name too long for a file)
            return folder / f"{name}.yaml"
    return folders[0] / f"{name}.yaml"


def shown_folders(folders: tuple[Path, ...]) -> str:
    """Folders as messages name them: each relative to the current folder when under it, else its full path
    (files.package_file), with a trailing '/', joined with ' and '."""
    return " and ".join(f"{package_file(f)}/" for f in folders)
