"""Build steps rendered to bash: each step template has the blocks `check`, `apply` and optionally `cleanup`.

`check` exits 0 when the step is already satisfied on the host, 1 when it is not (anything else is an
error). `apply` makes it so and must be safe to re-run after being cut off half way. `cleanup` removes
only what that step created. Templates are Jinja2 with StrictUndefined and hold no decisions: every
value comes from the typed BuildContext.
"""

from __future__ import annotations

import hashlib
import os
import re
import traceback

import jinja2
from msgspec import Struct

from gpufleet import inputs
from gpufleet.errors import Problem, UserError, some
from gpufleet.images import node, pylock, recipes
from gpufleet.images.recipes import Recipe, Step
from gpufleet.images.templating import environment
from gpufleet.secret import redact_url
from gpufleet.stacks.project import shown

PHASES = ("check", "apply", "cleanup")
HEADER = "#!/usr/bin/env bash\n# gpufleet image step {recipe} / {step} / {phase}\nset -euo pipefail\n"


class BuildContext(Struct, frozen=True):
    """What a step template may read."""

    recipe: Recipe
    step: Step
    python_lock: str  # content of the recipe's hash lock ("" when the recipe has none)

    @property
    def pins(self) -> dict[str, str]:
        return self.recipe.pins

    @property
    def layout(self):
        return self.recipe.layout


class RenderedStep(Struct, frozen=True):
    name: str
    check: str
    apply: str
    cleanup: str | None
    fact: str | None
    pin: str | None
    timeout_s: int
    vars: dict

    def digest(self) -> str:
        return hashlib.sha256("\0".join([self.check, self.apply, self.cleanup or ""]).encode()).hexdigest()


def python_lock_text(recipe: Recipe) -> str:
    """The recipe's hash lock ("" when it has none); a UserError on recipe.python_lock for a lock that is missing, leads
    out of images/ (a link), cannot be read, holds no requirement or holds a line that is not one of a pip hash lock:
    an install script is never rendered with an empty lock (pip would install nothing and the build would go on), and
    the lock's text, written into the script as a here-document, is only requirements, hashes and comments."""
    if not recipe.python_lock:
        return ""
    images = recipe.images  # the images/ folder of the recipes folder it was found in (a project's, or the package's)
    path = images / recipe.python_lock  # the name is relative and without '..' (Recipe._lock_named)
    shipped = recipes.IMAGES / recipe.python_lock
    ours = os.path.realpath(images) != os.path.realpath(recipes.IMAGES)  # a project's recipe: its lock is the project's
    # the script is a checkout's (not in the wheel): run in the project, it writes the project's file
    script = f"a gpufleet checkout's scripts/lock_image_python.py {recipe.name}, run in this project"
    regenerate = f"write it with {script}" if ours else f"run scripts/lock_image_python.py {recipe.name}"

    def refuse(why: str) -> UserError:
        return UserError([Problem(recipe.file, "recipe.python_lock", f"{recipe.python_lock} {why}")])

    if not os.path.lexists(path):
        if ours and os.path.isfile(shipped):  # a shipped recipe copied into the project without its lock
            raise refuse(
                f"is missing in {shown(images)}/: copy the package's {shown(shipped)} there (it locks the shipped "
                f"recipe's pins: right while the copy keeps them), or {regenerate}"
            )
        if ours:
            raise refuse(
                f"is missing: create {shown(path)}, the pip hash lock of the recipe's Python packages (vllm, torch and "
                f"its python_tools, each name==version with --hash=sha256:); {regenerate}"
            )
        raise refuse(f"is missing; {regenerate}")
    real = os.path.realpath(path)
    if os.path.commonpath([real, os.path.realpath(images)]) != os.path.realpath(images):
        raise refuse(f"is a link that leads out of images/ (to {real}): put the lock itself under images/locks/")
    try:
        text = inputs.read_text(path, str(path))
    except UserError as exc:  # a folder, not UTF-8, too large: named as the recipe's field, not a traceback
        raise UserError([Problem(recipe.file, "recipe.python_lock", f"{p.file}: {p.message}") for p in exc.problems]) from None
    if bad := lock_lines_problem(text):
        raise refuse(f"{bad}; {regenerate}")
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        raise refuse(f"holds no requirement; {regenerate}")
    return text if text.endswith("\n") else text + "\n"  # the here-document's end word goes on a line of its own


# The lines of a pip hash lock (pip's requirements file format, as scripts/lock_image_python.py writes it):
# `name==version`, its `--hash=sha256:<64 hex>` options on the same line or on lines continued with `\`, a `# comment`
# after whitespace, a blank line or a comment line between requirements.
_REQUIREMENT = re.compile(pylock.REQUIREMENT)
_HASH = re.compile(rf"--hash=sha256:{inputs.SHA256_HEX}")
_COMMENT = re.compile(r"(^|\s+)#.*$")


def lock_lines_problem(text: str) -> str | None:
    """Why `text` is not a pip hash lock (naming the lines that are none of its lines, or the requirements without a
    hash); None when it is one. A line is read as bash reads the here-document's (split at newlines only)."""
    bad: list[str] = []
    unhashed: list[str] = []
    start, hashed, continued = 0, False, False  # the requirement read: its line (0: none), a hash seen; a \ before

    for n, line in enumerate(text.split("\n"), 1):
        comment = _COMMENT.search(line)
        more = line.endswith("\\")
        words = _COMMENT.sub("", line).removesuffix("\\").split()
        if not continued:  # a line of its own: the requirement before it ends
            if start and not hashed:
                unhashed.append(str(start))
            start, hashed = (n, False) if words and _REQUIREMENT.fullmatch(words[0]) else (0, False)
            words = words[1:] if start else words
            ok = bool(start) or not (words or more)  # a requirement, a blank line or a comment line
        else:  # a continued line: more hashes of the requirement (pip joins it to the line before)
            ok = bool(start)
        ok = ok and all(_HASH.fullmatch(w) for w in words) and not (more and comment)  # pip joins the next into the #
        if not ok and (not continued or start):  # a continued line of a line named already is not named again
            bad.append(str(n))
            start = 0
        hashed = hashed or bool(words)
        continued = more
    if start and not hashed:
        unhashed.append(str(start))
    if bad:
        lines = text.split("\n")
        said = [lines[int(n) - 1] for n in bad]
        why = [
            why
            for why, seen in (
                ("Windows line ends (CRLF): save the lock with LF line ends", any(line.endswith("\r") for line in said)),
                (
                    "a pip option (--index-url, ...): the lock holds requirements only",
                    any(line.lstrip().startswith("-") and not line.lstrip().startswith("--hash=") for line in said),
                ),
                ("an environment marker (; ...): lock for the builder's Python and platform", any(";" in line for line in said)),
            )
            if seen
        ]
        return (
            f"is not a pip hash lock: line{'s' if len(bad) > 1 else ''} {some(bad)} "
            "not name==version, --hash=sha256:<64 hex digits> (lines continued with \\), a # comment or blank"
            + "".join(f" ({w})" for w in why)
        )
    if unhashed:
        return f"has a requirement without a --hash=sha256: (line{'s' if len(unhashed) > 1 else ''} {some(unhashed)})"
    return None


def _scripts(env: jinja2.Environment, recipe: Recipe, i: int, values: dict) -> dict[str, str | None]:
    """Step i's check / apply / cleanup scripts (cleanup None when its template has no such block). A template that
    cannot be read or rendered (not UTF-8, a Jinja syntax error, an undefined value, no check or apply block) is a
    UserError naming the template file and line and the step's field (recipe.steps.i.template), not a traceback."""
    step = recipe.steps[i]
    name = f"{step.template}.sh.j2"
    where = f"recipe.steps.{i}.template"
    shown = next((str(f / name) for f in recipe.template_folders() if os.path.isfile(f / name)), name)

    def refuse(line: int | None, why: str) -> UserError:
        at = f"{shown}:{line}" if line else shown
        return UserError([Problem(recipe.file, where, f"{at}: {why} (step {step.name})")])

    scripts: dict[str, str | None] = {}
    template: jinja2.Template | None = None
    try:
        template = env.get_template(name)
        shown = template.filename or name
        for phase in PHASES:
            block = template.blocks.get(phase)
            if block is None:
                if phase != "cleanup":
                    raise refuse(None, f"has no `{{% block {phase} %}}`: a step template needs check and apply blocks")
                scripts[phase] = None
                continue
            body = "".join(block(template.new_context(values)))
            scripts[phase] = HEADER.format(recipe=recipe.name, step=step.name, phase=phase) + body.lstrip("\n")
    except jinja2.TemplateSyntaxError as exc:
        shown = exc.filename or shown
        raise refuse(exc.lineno, f"template syntax error: {exc.message}") from None
    except UnicodeDecodeError:
        raise refuse(None, "is not UTF-8 text: save it as UTF-8") from None
    except jinja2.TemplateError as exc:  # an undefined value (StrictUndefined), a missing include, a filter's error
        # the block functions run outside Jinja's traceback rewriting: map the compiled code's line to the template's
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == shown and f.lineno]
        line = template.get_corresponding_lineno(lines[-1]) if lines and template is not None else None
        raise refuse(line, f"cannot render: {exc.message or exc}") from None
    return scripts


def render(recipe: Recipe) -> list[RenderedStep]:
    """Every step of the recipe, in order, as bash scripts."""
    env = environment(recipe)
    lock = python_lock_text(recipe)
    out = []
    for i, step in enumerate(recipe.steps):
        ctx = BuildContext(recipe=recipe, step=step, python_lock=lock)
        values = {
            "ctx": ctx,
            "recipe": recipe,
            "pins": recipe.pins,
            "layout": recipe.layout,
            "vars": step.vars,
            "python_lock": lock,
            "node_files": node.files(recipe) if any(s.template == "serving_layout" for s in recipe.steps) else [],
            "enabled_units": node.enabled_units(recipe),
            "removed": node.REMOVED,
            "folders": node.folders(),
        }
        scripts = _scripts(env, recipe, i, values)
        check, apply = scripts["check"], scripts["apply"]
        assert check is not None and apply is not None  # only the cleanup block may be absent (raised above)
        out.append(
            RenderedStep(
                step.name,
                check,
                apply,
                scripts["cleanup"],
                step.fact,
                step.pin,
                step.timeout_s,
                dict(step.vars),
            )
        )
    return out


def build_blockers(recipe: Recipe) -> list[tuple[str, str]]:
    """What stops a real build of this recipe even though its line is consistent (unverified downloads)."""
    out = []
    for i, repo in enumerate(recipe.apt_repos):
        if not repo.keyring_sha256 and not repo.keyring_fingerprint:
            out.append(
                (
                    f"recipe.apt_repos.{i}.keyring_sha256",
                    f"missing: the keyring {redact_url(repo.keyring_url)} must be verified by sha256 or keyring_fingerprint "
                    "before a build",
                )
            )
    for i, pkg in enumerate(recipe.apt_packages):
        if pkg.version is None:
            out.append(
                (
                    f"recipe.apt_packages.{i}.version",
                    f"missing: {pkg.name} must be pinned to the exact version its repository ({pkg.repo}) holds before a build",
                )
            )
    for i, dl in enumerate(recipe.downloads):
        if not dl.sha256:
            # a cloud's CLI its profile adds (tool_mirror + command: recipes.py _cloud_tools), in no line of the recipe file
            cli = bool(recipe.tool_mirror) and dl.url == recipe.tool_mirror + dl.dest.rsplit("/", 1)[-1]
            pin = (
                "; a cloud's CLI, added from its profile with no sha256: pin it in the recipe, a downloads entry with dest "
                f"{dl.dest} and its sha256 (which replaces the profile's)"
            )
            out.append(
                (
                    f"recipe.downloads.{i}.sha256",
                    f"missing: {redact_url(dl.url)} must be verified by sha256 before a build" + (pin if cli else ""),
                )
            )
    return out


def unverified(recipe: Recipe) -> list[str]:
    """Pins taken on trust (not yet seen in their repository): shown by `image check`, not errors."""
    return [
        f"apt package {p.name}={p.version or '(no version yet)'} ({p.repo}) not yet seen in the repository index"
        for p in recipe.apt_packages
        if not p.verified
    ]


def step_digest_problems(recipe: Recipe, steps: object) -> list[tuple[str, str]]:
    """(field, message) for each way a build manifest's `steps` (step -> the digest of that step as the host recorded it
    applied, runner.Runner) differ from the recipe's steps as they render now: such an image was built from another
    version of the recipe (a changed Python lock, a changed template) and does not hold what the recipe says."""
    fix = "rebuild with the current recipe (`gpufleet image build` applies the changed steps again) and lock that manifest"
    if not isinstance(steps, dict):
        return [("steps", f"is {inputs.kind(steps)}: the digest of each step the build applied; {fix}")]
    now = {s.name: s.digest() for s in render(recipe)}
    out = []
    for name, digest in now.items():
        got = steps.get(name)
        if got is None:
            out.append((f"steps.{name}", f"missing: the build did not record applying this step; {fix}"))
        elif got != digest:
            shown = f"{got[:12]}…" if isinstance(got, str) else inputs.kind(got)
            out.append((f"steps.{name}", f"applied {shown}, but the recipe's step is now {digest[:12]}…; {fix}"))
    out += [(f"steps.{name}", f"is not a step of recipe {recipe.name}; {fix}") for name in steps if name not in now]
    return out
