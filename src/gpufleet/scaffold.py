"""`gpufleet init`: a new project folder, the user state an installed gpufleet reads (stacks/project.py).

A project is Pulumi.yaml (the Python runtime, the program in stacks/), stacks/__main__.py (the program `pulumi up` and
`gpufleet preview` run for each stack), images/lock.json (the image ids the stacks read) and images/program/ (the
images program: its Pulumi.yaml and __main__.py; the user's images stacks go there). Stacks come after, from
`gpufleet region new`; the images from `gpufleet image build`, the images program and `image lock record`, or, to try
gpufleet offline, placeholders that preview and cost take (a placeholder is never deployed: docs/images.md). A project's
own recipes go in images/recipes/ (stacks/project.py recipe_folders). policy/ is the policy pack's project file and
entry point (the pack: gpufleet/policypack.py); examples/ (with --examples) the example inputs the help names.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from gpufleet import registry
from gpufleet.errors import Problem, UserError
from gpufleet.images.recipes import RECIPES, load_recipe
from gpufleet.stacks.lock import LOCK_COMMENT, region_entry
from gpufleet.stacks.project import PROGRAM_DIR, is_project

# The program every stack runs; the checkout's own stacks/__main__.py is this text (tests/test_scaffold.py).
PROGRAM = '''"""The Pulumi program: `pulumi up -s <stack>` runs this; `gpufleet preview` runs it under mocks."""

import pulumi

from gpufleet.components.fleet import declare_program
from gpufleet.validation import load_fleet

declare_program(load_fleet(pulumi.get_stack()))
'''

# The images program (images/program/__main__.py of a project); the checkout's own is this text (tests/test_scaffold.py).
IMAGES_PROGRAM = '''"""The images program: `pulumi up -s <stack>` in this folder (images/program/ of a gpufleet project), whose stack
files Pulumi.<stack>.yaml sit beside it; `gpufleet image pipeline` runs it under mocks (docs/images.md)."""

from pathlib import Path

import pulumi

from gpufleet.images.pipeline import program

program(Path(__file__).parent / f"Pulumi.{pulumi.get_stack()}.yaml")
'''


# The policy pack (policy/__main__.py of a project; the checkout's is this text): gpufleet/policypack.py serves it.
POLICY_PROGRAM = '''"""`pulumi preview --policy-pack policy`: gpufleet's provider contract as a Pulumi policy pack (gpufleet/policypack.py)."""

try:
    from gpufleet.policypack import serve
except ModuleNotFoundError as exc:  # gpufleet or pulumi-policy missing from the venv PulumiPolicy.yaml names
    raise SystemExit(
        f"gpufleet's policy pack: {exc}: pip install 'gpufleet[policy]' into the virtualenv of PulumiPolicy.yaml"
    ) from None

serve()
'''
POLICY_DIR = "policy"

# The example inputs the help and the docs name (examples/...: load test, budgets, bills, stacks with a rollout), shipped
# in the package; `init --examples` copies them into the project's examples/ (the checkout's examples/ links to them).
EXAMPLES = Path(__file__).parent / "examples"
# Pulumi's project names: "alphanumeric characters, hyphens, underscores, and periods" (pulumi.com, project file
# reference, `name`), 1 to 100 of them (pulumi/pulumi sdk/go/common/tokens ValidateProjectName: "project names are
# limited to 100 characters").
PROJECT_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def _runtime(venv: str | None) -> str:
    runtime = "  name: python\n  options:\n    toolchain: pip\n"
    if venv is not None:
        runtime += f"    virtualenv: {json.dumps(venv)}\n"
    return runtime


def pulumi_yaml(name: str, venv: str | None) -> str:
    """The project file: the Python runtime in `venv` (absolute, or relative to the project: Pulumi's language host
    joins a relative one to the project's folder; None: no virtualenv, Pulumi runs the `python3` on PATH), the program
    and stack files in stacks/. The name is quoted: YAML would read 123 or true as a number or a boolean, which Pulumi
    refuses as a name."""
    return (
        f"name: {json.dumps(name)}\ndescription: GPU inference fleets for vLLM (gpufleet)\nruntime:\n{_runtime(venv)}"
        "main: stacks/\nstackConfigDir: stacks/\n"
    )


def _below(folder: str, venv: str | None) -> str | None:
    """`venv` as the project's Pulumi.yaml names it (venv_for), as a file in the project's `folder` must name it: a path
    relative to the project made relative to that folder (Pulumi joins it to the folder of the file that names it)."""
    if venv is not None and not os.path.isabs(venv):
        return os.path.join(*[".."] * len(Path(folder).parts), venv)
    return venv


def images_pulumi_yaml(venv: str | None) -> str:
    """The images program's project file (images/program/Pulumi.yaml): the Pulumi project gpufleet-images, its program
    and stack files in its own folder, the Python runtime in `venv` (the project's, _below)."""
    return (
        "name: gpufleet-images\ndescription: golden image pipeline of one recipe (builder, image, copies; gpufleet's "
        f"docs/images.md)\nruntime:\n{_runtime(_below(PROGRAM_DIR, venv))}main: .\n"
    )


def policy_yaml(venv: str | None) -> str:
    """The policy pack's project file (policy/PulumiPolicy.yaml, read by `pulumi preview|up --policy-pack policy`): the
    Python runtime in `venv` (the project's, _below), where pulumi-policy must be installed (gpufleet[policy]); the
    pack's entry point is its folder's __main__.py (PulumiPolicy.yaml's `main` default)."""
    return (
        "description: gpufleet's provider contract (gpufleet/policypack.py), enforced on a real `pulumi preview|up "
        f"--policy-pack policy`\nruntime:\n{_runtime(_below(POLICY_DIR, venv))}version: 0.1.0\n"
    )


def venv_for(folder: Path) -> str | None:
    """The virtual environment this gpufleet runs in, where `pulumi up` must find it too: relative to the project when it
    lies inside it (`.venv`: the path works on every checkout of the project), else its absolute path (this machine's);
    None outside a virtual environment."""
    if sys.prefix == sys.base_prefix:
        return None
    # realpath, not resolve(): a link loop in `folder` raised RuntimeError (a traceback) before folder_problems named it
    venv, project = Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(folder))
    return os.path.relpath(venv, project) if venv.is_relative_to(project) else str(venv)


def placeholder_images() -> dict:
    """A placeholder lock entry for every shipped recipe in every region it copies its image to (ids of each cloud's form
    that say placeholder), as the checkout's images/lock.json holds for its example stacks. The package's recipes only,
    read from their files: init may run inside another project, whose own recipes are not the new project's."""
    out: dict = {}
    for path in sorted(RECIPES.glob("*.yaml")):
        name = path.stem
        regions = load_recipe(str(path)).regions
        out[name] = {
            "pins": {},
            "regions": {
                cloud: {
                    region: region_entry(
                        f"{registry.profile(cloud).image_id_prefix}placeholder-{name}-{region}", None, placeholder=True
                    )
                    for region in regions[cloud]
                }
                for cloud in sorted(regions)
            },
        }
    return out


# The files of EXAMPLES init copies, by name (tests/test_scaffold.py holds it to the files git tracks there): not whatever
# else the folder holds, e.g. the state a rollout help example leaves beside the stack file it walks in a checkout.
EXAMPLE_FILES = (
    "Pulumi.alicloud-cn-hangzhou-prod-rollout.yaml",
    "Pulumi.tencentcloud-ap-guangzhou-prod-rollout.yaml",
    "bill-alicloud-example.csv",
    "bill-tencentcloud-example.csv",
    "budgets-example.yaml",
    "images/Pulumi.example-cuda13-vllm-alicloud.yaml",  # an images stack (the images program's: images/program/)
    "loadtest-example.json",
)


def example_files() -> dict[str, str]:
    """examples/<file> -> content: the package's example inputs (EXAMPLE_FILES of EXAMPLES)."""
    return {f"examples/{name}": (EXAMPLES / name).read_text(encoding="utf-8") for name in EXAMPLE_FILES}


def project_files(name: str, venv: str | None, placeholders: bool, examples: bool = False) -> dict[str, str]:
    """Path in the project -> content, for a new project."""
    lock = {"comment": LOCK_COMMENT, "images": placeholder_images() if placeholders else {}}
    return {
        "Pulumi.yaml": pulumi_yaml(name, venv),
        "stacks/__main__.py": PROGRAM,
        "images/lock.json": json.dumps(lock, indent=2) + "\n",
        f"{PROGRAM_DIR}/Pulumi.yaml": images_pulumi_yaml(venv),
        f"{PROGRAM_DIR}/__main__.py": IMAGES_PROGRAM,
        f"{POLICY_DIR}/PulumiPolicy.yaml": policy_yaml(venv),
        f"{POLICY_DIR}/__main__.py": POLICY_PROGRAM,
        **(example_files() if examples else {}),
    }


def entries(files: dict[str, str]) -> list[str]:
    """The top-level entries of the project's files (what init puts into the folder, each refused if already there)."""
    return list(dict.fromkeys(rel.split("/", 1)[0] for rel in files))


def name_problem(name: str) -> str | None:
    if PROJECT_NAME.fullmatch(name):
        return None
    return (
        f"{name[:60]!r}{'…' if len(name) > 60 else ''} is not a Pulumi project name: 1 to 100 letters, digits, hyphens, "
        "underscores and periods (e.g. llm-fleet)"
    )


def folder_problems(folder: Path, flag: str, tops: list[str]) -> list[Problem]:
    """Why a new project of the top-level entries `tops` cannot be made in `folder` (an existing folder, or a path to
    create); [] when it can."""
    shown = str(folder)
    if bad := _unresolved(folder):  # a link loop, or a link (this one or one on the way) leading nowhere
        return [Problem(flag, shown, f"{bad}: fix the link, or give a new path or a folder that holds no project")]
    if os.path.lexists(folder) and not folder.is_dir():
        return [Problem(flag, shown, "exists and is not a folder: give a new path or a folder that holds no project")]
    here = folder.absolute()
    if outer := next((p for p in here.parents if is_project(p) and p / "stacks" in (here, *here.parents)), None):
        return [
            Problem(
                flag,
                shown,
                f"is inside the stacks/ of the project {outer}: a project there breaks that one (its stacks/ is the "
                "program's folder, which Pulumi would take for this project); give a folder outside it",
            )
        ]
    if not os.path.lexists(folder):
        parent = next((p for p in here.parents if os.path.lexists(p)), Path("/"))
        if not parent.is_dir():
            return [Problem(flag, shown, f"{parent} is a file, not a folder: cannot create a folder under it")]
        return []
    return [
        Problem(
            flag,
            str(folder / entry),
            "already exists: init writes a new project and overwrites nothing; give an empty "
            "folder or a new path (an existing project is used as it is)",
        )
        for entry in tops
        if os.path.lexists(folder / entry)
    ]


def _unresolved(folder: Path) -> str | None:
    """What is wrong when `folder`, or the nearest of its parents that is there, is a symbolic link that does not
    resolve (a loop of links, or a link to nothing): is_dir() is False there, and the folder was said to be "a file"."""
    for p in (folder, *folder.parents):
        if not os.path.lexists(p):
            continue
        if not os.path.islink(p):
            return None
        try:
            os.stat(p)
        except OSError as exc:
            what = "is a loop of links" if exc.errno == errno.ELOOP else "leads to nothing"
            try:
                to = f" (to {os.readlink(p)})"
            except OSError:
                to = ""
            return f"{'' if p == folder else f'{p} '}is a symbolic link that {what}{to}"
        return None
    return None


def create(folder: Path, files: dict[str, str], flag: str = "DIR") -> None:
    """Write the project's files under `folder` (made with its parents if missing), all or nothing: they are written into
    a temporary folder inside it, then each top-level entry is put into place without replacing anything (a file by
    link(2), which fails on an existing name; a folder by rename(2), which fails on a folder that holds anything); a
    failure removes only what this run placed and the folders it made. Two inits at once: one wins, the other is
    refused."""
    if problems := folder_problems(folder, flag, entries(files)):
        raise UserError(problems)
    made = [p for p in reversed([folder.absolute(), *folder.absolute().parents]) if not os.path.lexists(p)]
    placed: list[Path] = []
    stage = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(dir=folder, prefix=".gpufleet-init."))
        for rel, content in files.items():
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_text(content, encoding="utf-8")
        for entry in entries(files):
            if (stage / entry).is_dir():
                os.rename(stage / entry, folder / entry)
            else:
                os.link(stage / entry, folder / entry)
            placed.append(folder / entry)
    except OSError as exc:
        for p in placed:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        for p in reversed(made):
            try:
                p.rmdir()
            except OSError:
                pass
        where = exc.filename2 or exc.filename or str(folder)
        if isinstance(exc, FileExistsError) or exc.errno == errno.ENOTEMPTY:  # made meanwhile (another init)
            raise UserError([Problem(flag, str(where), "appeared while init ran (another init?); nothing was written")]) from None
        raise UserError([Problem(flag, str(where), f"cannot write: {exc.strerror}; nothing was written")]) from None
    shutil.rmtree(stage, ignore_errors=True)
