"""Port code written against the pre-src layout to the src/ layout (run at the repo root after a merge).
Rewrites imports and repo-relative paths in src/, tests/, scripts/, policy/, stacks/__main__.py, docs/."""

import pathlib
import re
import sys

PY_SUBS = [
    (r"from gpufleet\.components import registry\b", "from gpufleet import registry"),
    (r"gpufleet\.components\.registry\b", "gpufleet.registry"),
    (r"from gpufleet\.images import lock\b", "from gpufleet.stacks import lock"),
    (r"gpufleet\.images\.lock\b", "gpufleet.stacks.lock"),
    (r"from gpufleet\.stacks import regions\b", "from gpufleet import regions"),
    (r"from gpufleet\.stacks import loader, regions\b", "from gpufleet import regions\nfrom gpufleet.stacks import loader"),
    (
        r"from gpufleet\.stacks import catalog, loader, regions\b",
        "from gpufleet import regions\nfrom gpufleet.stacks import catalog, loader",
    ),
    (r"gpufleet\.stacks\.regions\b", "gpufleet.regions"),
    (r"from gpufleet\.errors import read_json_object\b", "from gpufleet.inputs import read_json_object"),
    (r"from gpufleet\.images\.steps import environment\b", "from gpufleet.images.templating import environment"),
    (r"from gpufleet\.stacks\.loader import load_fleet\b", "from gpufleet.validation import load_fleet"),
]
PATH_RE = re.compile(
    r'(\b(?:ROOT|REPO|sweep\.ROOT)\s*/\s*)("(?:components|sizing|simulate|rollout)(?:/[^"]*)?"|"images"(?!\s*/\s*"lock\.json")|"images/(?!lock\.json)[^"]*"|"cost"(?=\s*/\s*"(?:data|templates)")|"cost/(?:data|templates)[^"]*"|"stacks"(?=\s*/\s*"(?:data|templates)")|"stacks/(?:data|templates)[^"]*")'
)


def port_py(text: str, path: str) -> str:
    for a, b in PY_SUBS:
        text = re.sub(a, b, text)
    if not path.startswith("src/gpufleet/stacks/") and path not in (
        "src/gpufleet/validation.py",
        "src/gpufleet/cost/commitment.py",
    ):
        before = text
        text = re.sub(r"\bloader\.load_fleet\(", "validation.load_fleet(", text)
        text = re.sub(r"(?<![\w.])loader\.validate\(", "validation.validate(", text)
        if text != before and not re.search(r"^\s*from gpufleet import .*\bvalidation\b", text, re.M):
            m = re.search(r"^(\s*)from gpufleet\.stacks import (?:.*\b)?loader\b.*$", text, re.M)
            if m:
                text = text[: m.end()] + f"\n{m.group(1)}from gpufleet import validation" + text[m.end() :]
            else:
                print("NEEDS validation IMPORT:", path, file=sys.stderr)
    if path.startswith(("tests/", "scripts/")):
        text = PATH_RE.sub(lambda m: m.group(1) + '"src" / "gpufleet" / ' + m.group(2), text)
    return text


def main():
    roots = [pathlib.Path(p) for p in ("src", "tests", "scripts", "policy", "stacks")]
    for root in roots:
        for f in root.rglob("*.py"):
            s = f.read_text()
            n = port_py(s, str(f))
            if n != s:
                f.write_text(n)
                print("ported", f)


if __name__ == "__main__":
    main()
