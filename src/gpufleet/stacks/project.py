"""Where the user's project is: the folder whose user state (stacks/, images/lock.json, cost/usage/) gpufleet reads, and
the image recipes found from it (its images/recipes/, then the package's)."""

from __future__ import annotations

import errno
import os
import re
import stat
from functools import lru_cache
from pathlib import Path

from gpufleet.errors import Problem, UserError


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
            what = "is a link that leads to no folder" if os.path.islink(given) else "is a file"
            what = what if os.path.lexists(given) else "does not exist"
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
    """The project as project_root finds it; None when no project is found from the current folder (where only what the
    package ships exists). A GPUFLEET_PROJECT that is no folder is refused as project_root refuses it: it names the
    project the user meant, whose recipes must not silently give way to the package's."""
    if os.environ.get("GPUFLEET_PROJECT"):
        return project_root()
    try:
        return project_root()
    except UserError:
        return None


# Folders of a project that gpufleet looks in before the package's, relative to the project's root (spelled here only).
RECIPES_DIR = "images/recipes"  # its image recipes, <name>.yaml: its own, or a copy of a shipped one that shadows it
PROGRAM_DIR = "images/program"  # the images program (`gpufleet init` writes it) and its stacks, Pulumi.<name>.yaml
PACKAGE = Path(__file__).resolve().parent.parent  # the installed gpufleet/ (a checkout's src/gpufleet/)
SHIPPED_RECIPES = PACKAGE / RECIPES_DIR  # the image recipes the package ships (gpufleet/images/recipes/)


def shown(path: Path) -> str:
    """A path as messages name it: as it was found, a link in it not followed (the user's images/recipes/x.yaml, not
    where a link of it leads), relative to the current folder when under it, else absolute."""
    try:
        full = os.path.abspath(path)
        return os.path.relpath(full) if Path(full).is_relative_to(os.getcwd()) else full
    except OSError:  # the current folder is gone
        return str(path)


class _Unusable:
    """A path that is there but cannot be used: why, and how to fix it (`{}` in the fix: what belongs there)."""

    def __init__(self, why: str, fix: str):
        self.why, self.fix = why, fix

    def said(self, what: str) -> str:
        return f"{self.why}: {self.fix.format(what)}"


def _state(path: Path) -> os.stat_result | _Unusable | None:
    """What is at `path`, following links: its stat; None when nothing is; else why it cannot be used (a link that
    leads nowhere or loops, a path that cannot be read)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        if not os.path.islink(path):
            return None
        why = "is a symbolic link that leads to nothing"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            why = "is a loop of symbolic links"
        elif exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR, errno.EINVAL):  # no file can have that name there
            return None
        else:
            return _Unusable(f"cannot be read ({exc.strerror})", "fix its permissions, or its folder's")
    try:
        why += f" (to {os.readlink(path)})"
    except OSError:
        pass
    return _Unusable(why, "fix the link, or replace it with {}")


def _folder_problem(folder: Path, holds: str) -> Problem | None:
    """Why the project's `folder` (where `holds` are looked up before the package's) cannot be searched; None when it
    can or is absent. It was skipped without a word: the package's file of a name was taken for the project's."""
    got = _state(folder)
    if got is None:
        return None
    if isinstance(got, _Unusable):
        why = got.said(f"a folder holding {holds}")
    elif not stat.S_ISDIR(got.st_mode):
        why = f"is a file: make it a folder holding {holds} (move the file into it)"
    else:
        try:
            with os.scandir(folder):
                return None
        except OSError as exc:
            why = f"cannot be listed ({exc.strerror}): fix its permissions (it holds {holds})"
    return Problem(shown(folder), "", why)


@lru_cache(maxsize=16)
def _project(given: str | None, cwd: str) -> Path | None:
    """find_project for one GPUFLEET_PROJECT and current folder (the key: its answer for them): each name a preview
    looks up did walk up from the current folder again."""
    return find_project()


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the current folder is gone: find_project says whether that is a project
        return ""


def project_first(relative: str, shipped: Path, holds: str) -> tuple[Path, ...]:
    """The folders a name is looked up in, in order: the project's `relative` folder (found as project_root finds the
    project; it may be absent or empty), then the package's `shipped` one; outside a project, `shipped` alone. A
    project folder that is there but cannot be searched (a file, a link that leads nowhere or loops, unreadable) is a
    UserError naming it, never skipped."""
    root = _project(os.environ.get("GPUFLEET_PROJECT") or None, _cwd())
    if root is None:
        return (shipped,)
    folder = root / relative
    if problem := _folder_problem(folder, holds):
        raise UserError([problem])
    return (folder, shipped)


def first(folders: tuple[Path, ...], filename: str, what: str) -> Path | None:
    """The first of `folders` whose `filename` is a file (links followed), or None. An entry there that is no file (a
    folder, a link that leads nowhere or loops, one that cannot be read) is a UserError naming it as found, with the fix
    (it was skipped, and the package's file of that name taken instead, without a word)."""
    for folder in folders:
        path = folder / filename
        got = _state(path)
        if got is None:
            continue
        if isinstance(got, _Unusable):
            why = got.said(what)
        elif stat.S_ISREG(got.st_mode):
            return path
        else:
            kind = "a folder" if stat.S_ISDIR(got.st_mode) else "no regular file"
            why = f"is {kind}, not {what}: put {what} there, or remove it"
        if len(folders) > 1 and folder != folders[-1]:
            why += f" (without it, the package's {filename} is used, if it ships one)"
        raise UserError([Problem(shown(path), "", why)])
    return None


def listed(folders: tuple[Path, ...], prefix: str, suffix: str) -> dict[str, Path]:
    """Name -> file of every `prefix`<name>`suffix` of `folders`, sorted by name, the first folder's file of a name
    shadowing the later ones'. Dot-files are no names (macOS's ._x.yaml, an editor's .#x.yaml); a folder that is absent
    is empty, one that cannot be listed a UserError."""
    found: dict[str, Path] = {}
    for folder in reversed(folders):
        try:
            with os.scandir(folder) as entries:
                names = [e.name for e in entries]
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UserError([Problem(shown(folder), "", f"cannot be listed ({exc.strerror}): fix its permissions")]) from None
        found.update(
            (n[len(prefix) : len(n) - len(suffix)], folder / n)
            for n in names
            if not n.startswith(".") and n.startswith(prefix) and n.endswith(suffix) and len(n) > len(prefix) + len(suffix)
        )
    return dict(sorted(found.items()))


def found_in(path: Path, folders: tuple[Path, ...]) -> Path | None:
    """The one of `folders` that holds the file `path` (as the lookup names it, or given by a path of its own: the same
    folder, through links or not), or None."""
    if path.parent in folders:
        return path.parent
    for folder in folders:
        try:
            if os.path.samefile(path.parent, folder):
                return folder
        except OSError:
            continue
    return None


# A recipe's name (images/recipes.py name_problem says why one is not): one path component, never hidden, never `..`.
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
RECIPE_FILES = "<name>.yaml recipe files"


def recipe_folders() -> tuple[Path, ...]:
    """Where a recipe is looked up by name, in order: the project's images/recipes/ (RECIPES_DIR; it may hold none),
    then the package's shipped recipes; outside a project, the shipped ones alone (project_first)."""
    return project_first(RECIPES_DIR, SHIPPED_RECIPES, RECIPE_FILES)


def recipe_images(folder: Path) -> Path:
    """The images/ folder of a recipes folder the lookup searches (the project's RECIPES_DIR, or the package's): the one
    its recipes' python_lock paths are relative to. Decided here only, from the folder a recipe was found in, never from
    where a link of it leads."""
    return folder.parent


def _by_name(folders: tuple[Path, ...] | None) -> dict[str, Path]:
    return listed(folders or recipe_folders(), "", ".yaml")


def recipe_files(folders: tuple[Path, ...] | None = None) -> dict[str, Path]:
    """Recipe name -> its file, for every recipe of `folders` (default: recipe_folders()), sorted by name: the first
    folder's file of a name shadows the later ones'. A file whose name is no recipe name is left out (misnamed_recipes
    names it), as dot-files are."""
    return {n: p for n, p in _by_name(folders).items() if re.fullmatch(NAME_PATTERN, n)}


def misnamed_recipes(folders: tuple[Path, ...] | None = None) -> list[Path]:
    """The .yaml files of `folders` that recipe_files leaves out, their names being no recipe names (Bad Name.yaml)."""
    return [p for n, p in _by_name(folders).items() if not re.fullmatch(NAME_PATTERN, n)]


def checked_recipe_files(folders: tuple[Path, ...] | None = None) -> dict[str, Path]:
    """recipe_files, each file checked as recipe_file checks the one it finds: for what reads every recipe (the
    sizing's pins, `region new`'s choice of one)."""
    folders = folders or recipe_folders()
    return {n: recipe_file(n, folders) for n in recipe_files(folders)}


def recipe_file(name: str, folders: tuple[Path, ...] | None = None) -> Path:
    """The file of the recipe `name` (a recipe name, not a path: one path component): the first of `folders` (default:
    recipe_folders()) that holds <name>.yaml; when none does, the first folder's <name>.yaml, which does not exist
    (where a project recipe of that name would be). An entry of that name that is no file is a UserError (first)."""
    folders = folders or recipe_folders()
    return first(folders, f"{name}.yaml", "the recipe's file") or folders[0] / f"{name}.yaml"


def recipe_stamp(names: list[str]) -> tuple | None:
    """What the recipes of `names` are read from: the folders, and each file's path and stat; None when one cannot
    be looked up (a load then says why). A fleet validated against one recipe is not taken for another's."""
    try:
        folders = recipe_folders()
        stamps = []
        for name in names:
            path = recipe_file(name, folders)
            st = os.stat(path)
            stamps.append((str(path), st.st_ino, st.st_mtime_ns, st.st_size))
    except (UserError, OSError):
        return None
    return (folders, *stamps)


def shown_folders(folders: tuple[Path, ...]) -> str:
    """Folders as messages name them: each relative to the current folder when under it, else its full path (shown),
    with a trailing '/', joined with ' and '."""
    return " and ".join(f"{shown(f)}/" for f in folders)
