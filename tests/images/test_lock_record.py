"""`gpufleet image lock record`: a finished build's images go into the lock only if they match the recipe."""

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet import registry
from gpufleet.images.recipes import load_recipe
from gpufleet.images.steps import render
from gpufleet.stacks import lock

RECIPE = load_recipe("cuda13-vllm")
STEPS = {s.name: s.digest() for s in render(RECIPE)}  # what a build of the recipe as it is now records
ALL = [f"{c}/{r}" for c, rs in RECIPE.regions.items() for r in rs]


def _ids(where: str) -> str:
    cloud, region = where.split("/")
    return f"{where}={registry.profile(cloud).image_id_prefix}{region.replace('-', '')}0001"


@pytest.fixture
def files(tmp_path):
    manifest = tmp_path / "m.json"
    body = {
        "recipe": RECIPE.name,
        "pins": dict(sorted(RECIPE.pins.items())),
        "observed": {"driver_package": RECIPE.pins["driver"], "python_version": "3.12.3", "vllm_version": RECIPE.pins["vllm"]},
        "steps": STEPS,
        "build_time": "2026-12-03T05:00:00+00:00",
    }
    manifest.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    lock_file = tmp_path / "lock.json"
    shutil.copy(lock.lock_path(), lock_file)
    return manifest, lock_file


def record(manifest, lock_file, *args):
    cmd = [
        sys.executable,
        "-m",
        "gpufleet.cli.image",
        "lock",
        "record",
        "-r",
        RECIPE.name,
        "-m",
        str(manifest),
        "--lock",
        str(lock_file),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_records_every_region_with_pins_and_digest(files):
    manifest, lock_file = files
    args = [a for w in ALL for a in ("--image", _ids(w))]
    r = record(manifest, lock_file, *args)
    assert r.returncode == 0, r.stderr
    ref = lock.image_for(RECIPE.name, "alicloud", "cn-beijing", lock_file)
    assert ref.image_id == "m-cnbeijing0001" and not ref.placeholder
    assert ref.manifest_sha256 == hashlib.sha256(manifest.read_bytes()).hexdigest()
    assert ref.pins == RECIPE.pins
    other = json.loads(lock_file.read_text())["images"]["cuda12-vllm-v100"]
    assert other == json.loads(lock.lock_path().read_text())["images"]["cuda12-vllm-v100"]  # other recipes untouched


def test_lock_show_shows_the_file_lock_record_wrote(files, tmp_path):
    manifest, lock_file = files
    assert record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))]).returncode == 0
    cmd = [sys.executable, "-m", "gpufleet.cli.image", "lock", "show", "--json", "--lock", str(lock_file)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    shown = {(x["recipe"], x["cloud"], x["region"]): x["image_id"] for x in json.loads(r.stdout)}
    assert shown[(RECIPE.name, "alicloud", "cn-beijing")] == "m-cnbeijing0001"  # the recorded id, not images/lock.json's
    missing = subprocess.run([*cmd[:-1], str(tmp_path / "nope.json")], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and f"--lock: {tmp_path / 'nope.json'}: no such file" in missing.stderr, missing.stderr


@pytest.mark.parametrize("images_folder", [True, False], ids=["images-no-lock", "no-images-folder"])
def test_the_first_record_of_a_project_creates_its_lock(files, tmp_path, images_folder):
    """A project has no images/lock.json until its first `image lock record` (the normal first step; `gpufleet init`
    makes an empty one): record without --lock writes it, and a project made by hand without images/ gets the
    folder (it was refused naming `--lock`, which was not given). Reading the missing lock is refused (preview,
    `lock show`), writing it is not."""
    import os

    manifest, _ = files
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(Path(__file__).resolve().parents[2] / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "stacks").mkdir()
    if images_folder:
        (project / "images").mkdir()
    env = {**os.environ, "GPUFLEET_PROJECT": str(project)}

    def cli(*args):
        cmd = [sys.executable, "-m", "gpufleet.cli.image", "lock", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)

    shown = cli("show", "--json")
    assert shown.returncode == 2 and f"{project / 'images' / 'lock.json'}: does not exist; " in shown.stderr
    r = cli("record", "-r", RECIPE.name, "-m", str(manifest), *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 0, r.stderr
    written = json.loads((project / "images" / "lock.json").read_text())
    assert list(written["images"]) == [RECIPE.name]
    shown = cli("show", "--json")
    assert shown.returncode == 0, shown.stderr
    assert {(x["cloud"], x["region"]) for x in json.loads(shown.stdout)} == {tuple(w.split("/")) for w in ALL}


def test_outputs_of_the_images_stack_and_explicit_ids_merge(files, tmp_path):
    manifest, lock_file = files
    outputs = tmp_path / "outputs.json"
    ali = {f"image:alicloud:{r}": f"m-{r}" for r in RECIPE.regions["alicloud"]}
    outputs.write_text(
        json.dumps(
            {
                **ali,
                "image:tencentcloud:ap-guangzhou": "img-gz1",
                "image:tencentcloud:synced": "sync-1",
                "builder_instance_id": "i-1",
            }
        )
    )
    rest = [a for r in RECIPE.regions["tencentcloud"] if r != "ap-guangzhou" for a in ("--image", f"tencentcloud/{r}=img-{r}")]
    r = record(manifest, lock_file, "--outputs", str(outputs), *rest)
    assert r.returncode == 0, r.stderr
    assert lock.image_for(RECIPE.name, "tencentcloud", "ap-guangzhou", lock_file).image_id == "img-gz1"


def test_an_image_output_that_is_not_text_is_named_not_said_missing(files, tmp_path):
    manifest, lock_file = files
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"image:alicloud:cn-hangzhou": 5, "image:alicloud:cn-beijing": None}))
    before = lock_file.read_bytes()
    r = record(manifest, lock_file, "--outputs", str(outputs))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{outputs}: image:alicloud:cn-hangzhou: is a number: an image output is the image id (text)" in r.stderr
    assert f"{outputs}: image:alicloud:cn-beijing: is nothing (null)" in r.stderr
    assert "no image:<cloud>:<region> outputs" not in r.stderr
    assert lock_file.read_bytes() == before


def test_an_outputs_file_that_cannot_be_read_is_the_one_problem_not_every_region_missing(files, tmp_path):
    # the ids it holds are not known: "--image: images: no image id for <every region>" was added, blaming --image
    manifest, lock_file = files
    outputs = tmp_path / "outputs.json"
    outputs.write_text('{"image:alicloud:cn-hangzhou": ')
    r = record(manifest, lock_file, "--outputs", str(outputs))
    errors = [line for line in r.stderr.splitlines() if line.startswith("error ")]
    assert r.returncode == 2 and errors == [f"error {outputs}:1:32: not valid JSON: Expecting value"], r.stderr


def test_a_manifest_whose_host_did_not_hold_the_pins_is_refused_and_lock_untouched(files):
    """The manifest's pins were compared, not what the build observed on the host: a build whose vLLM was 0.1 (or a
    hand-edited manifest) was locked as the recipe's image."""
    manifest, lock_file = files
    doc = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**doc, "observed": {"vllm_version": "0.1.0", "python_version": ["3.12"]}}))
    before = lock_file.read_bytes()
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{manifest}: observed.vllm_version: the host had '0.1.0', but pin vllm is {RECIPE.pins['vllm']}" in r.stderr
    assert f"{manifest}: observed.python_version: the host had ['3.12']" in r.stderr
    assert lock_file.read_bytes() == before


@pytest.mark.parametrize("observed", [{}, None], ids=["empty", "absent"])
def test_a_manifest_without_the_host_facts_its_steps_pin_is_refused_and_lock_untouched(files, observed):
    """docs/images.md: lock record refuses a manifest whose host facts miss the pins; one of recipe and pins alone (a
    hand-written manifest) was locked."""
    manifest, lock_file = files
    doc = json.loads(manifest.read_text())
    doc = {k: v for k, v in doc.items() if k != "observed"} | ({} if observed is None else {"observed": observed})
    manifest.write_text(json.dumps(doc))
    before = lock_file.read_bytes()
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    for fact, pin in (("driver_package", "driver"), ("python_version", "python"), ("vllm_version", "vllm")):
        assert f"{manifest}: observed.{fact}: missing: the build records it (pin {pin} " in r.stderr
    assert lock_file.read_bytes() == before


def test_build_with_other_pins_is_refused_and_lock_untouched(files):
    manifest, lock_file = files
    doc = json.loads(manifest.read_text())
    doc["pins"]["vllm"] = "0.32.0"
    manifest.write_text(json.dumps(doc))
    before = lock_file.read_text()
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2
    assert "vllm built 0.32.0, recipe 0.33.0" in r.stderr and "Traceback" not in r.stderr
    assert lock_file.read_text() == before


def test_missing_region_bad_id_and_bad_syntax_are_named(files):
    manifest, lock_file = files
    before = lock_file.read_text()
    given = [a for w in ALL[2:] for a in ("--image", _ids(w))]
    r = record(manifest, lock_file, *given, "--image", f"{ALL[1]}=i-notanimage")
    assert r.returncode == 2
    assert f"no image id for {ALL[0]}" in r.stderr
    assert "'i-notanimage' is not a" in r.stderr
    r = record(manifest, lock_file, "--image", "alicloud:cn-hangzhou:m-1")
    assert r.returncode == 2 and "write CLOUD/REGION=IMAGE_ID" in r.stderr
    r = record(manifest, lock_file, "--image", "aliclod/cn-hangzhou=m-1")
    assert r.returncode == 2 and "did you mean 'alicloud'" in r.stderr
    assert lock_file.read_text() == before


@pytest.mark.parametrize(
    "recipe, said",
    [
        (None, "recipe: missing: a build manifest names its recipe (cuda13-vllm)"),  # review F13: "of recipe None"
        (["x"], "recipe: the manifest is of recipe a list, not 'cuda13-vllm'"),
        ("other", "recipe: the manifest is of recipe 'other', not 'cuda13-vllm'"),
    ],
)
def test_a_manifest_of_no_or_another_recipe_is_named(files, recipe, said):
    manifest, lock_file = files
    doc = json.loads(manifest.read_text())
    doc.pop("recipe")
    manifest.write_text(json.dumps(doc if recipe is None else {**doc, "recipe": recipe}))
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{manifest}: {said}" in r.stderr and "None" not in r.stderr


def test_unreadable_manifest_is_a_clear_error(files, tmp_path):
    _, lock_file = files
    r = record(tmp_path / "nope.json", lock_file, "--image", _ids(ALL[0]))
    assert r.returncode == 2 and "cannot read the build manifest" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "pins, said",
    [([1], "pins: is a list: the pins the build was made with"), ({"vllm": 1, "cuda": None}, "pins.vllm: is a number")],
)
def test_manifest_pins_that_are_not_version_strings_are_named(files, pins, said):
    manifest, lock_file = files
    doc = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**doc, "pins": pins}))
    before = lock_file.read_text()
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{manifest}: {said}" in r.stderr and "version string" in r.stderr
    assert lock_file.read_text() == before


def test_a_region_given_twice_is_refused(files, tmp_path):
    manifest, lock_file = files
    before = lock_file.read_text()
    ids = [a for w in ALL for a in ("--image", _ids(w))]
    r = record(manifest, lock_file, *ids, "--image", f"{ALL[0]}=m-other1")
    assert r.returncode == 2
    assert f"--image: {ALL[0]}: given twice ({_ids(ALL[0]).split('=')[1]} from --image, m-other1 from --image)" in r.stderr
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({f"image:{ALL[0].replace('/', ':')}": "m-fromoutputs1"}))
    r = record(manifest, lock_file, "--outputs", str(outputs), *ids)
    assert r.returncode == 2 and f"given twice (m-fromoutputs1 from {outputs}, " in r.stderr
    assert lock_file.read_text() == before


def test_every_image_problem_at_once_named_by_where_it_was_given(files, tmp_path):
    manifest, lock_file = files
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"image:alicloud:cn-hangzhou": "img-1"}))  # a Tencent id for an Alibaba region
    r = record(manifest, lock_file, "--outputs", str(outputs), "--image", "bad", "--image", "alicloud/cn-beijing=img-2")
    assert r.returncode == 2
    assert f"{outputs}: alicloud/cn-hangzhou: 'img-1' is not an alicloud image id" in r.stderr
    assert "--image: alicloud/cn-beijing: 'img-2' is not an alicloud image id" in r.stderr
    assert "--image: 'bad': write CLOUD/REGION=IMAGE_ID" in r.stderr  # reported with the others, not before them


@pytest.mark.parametrize("where, said", [("/dev/null", "is not a regular file"), ("nodir/lock.json", "does not exist")])
def test_lock_option_problems_name_lock(files, tmp_path, where, said):
    manifest, _ = files
    target = where if where.startswith("/") else tmp_path / where
    r = record(manifest, target, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2
    assert f"--lock: {target}: " in r.stderr and said in r.stderr and "-o:" not in r.stderr
    assert not (tmp_path / "nodir").exists()


def test_lock_that_is_the_manifest_is_refused(files):
    manifest, _ = files
    before = manifest.read_text()
    r = record(manifest, manifest, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and f"--lock: {manifest}: is an input of this command" in r.stderr
    assert manifest.read_text() == before


def test_a_manifest_of_another_version_of_the_recipe_is_refused_and_lock_untouched(files):
    """The manifest's `steps` are the digests the builder recorded as applied: a build of an older lock or template
    (its pins the same) is not an image of the recipe as it is now. Made-up digests were locked (review finding 2)."""
    manifest, lock_file = files
    doc = json.loads(manifest.read_text())
    older = {**STEPS, "python-packages": "0" * 64}
    del older["downloads"]
    manifest.write_text(json.dumps({**doc, "steps": {**older, "extra": "1" * 64}}))
    before = lock_file.read_bytes()
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    now = STEPS["python-packages"][:12]
    assert f"{manifest}: steps.python-packages: applied 000000000000…, but the recipe's step is now {now}…; rebuild" in r.stderr
    assert f"{manifest}: steps.downloads: missing: the build did not record applying this step" in r.stderr
    assert f"{manifest}: steps.extra: is not a step of recipe {RECIPE.name}" in r.stderr
    assert "`gpufleet image build` applies the changed steps again" in r.stderr
    assert lock_file.read_bytes() == before
    manifest.write_text(json.dumps({k: v for k, v in doc.items() if k != "steps"}))
    r = record(manifest, lock_file, *[a for w in ALL for a in ("--image", _ids(w))])
    assert r.returncode == 2 and f"{manifest}: steps: is nothing" in r.stderr, r.stderr


def _outputs(tmp_path, digest=None, skip=()):
    """The images stack's `pulumi stack output --json` with an id for every region of the recipe but `skip`."""
    doc = {f"image:{w.replace('/', ':')}": _ids(w).split("=")[1] for w in ALL if w not in skip}
    if digest is not None:
        doc["manifest_sha256"] = digest
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(doc))
    return path


def test_outputs_of_images_made_from_another_manifest_are_refused(files, tmp_path):
    """Review finding 12: the ids were never tied to the manifest: the outputs of one build could be locked with the
    manifest of another as long as the pins agreed."""
    manifest, lock_file = files
    before = lock_file.read_bytes()
    other = _outputs(tmp_path, digest="cd" * 32)
    r = record(manifest, lock_file, "--outputs", str(other))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert (
        f"error {other}: manifest_sha256: the images were made from the build whose manifest has sha256 cdcdcdcdcdcdcdcd…, "
        f"not {manifest}: give that build's manifest with --manifest"
    ) in r.stderr
    assert lock_file.read_bytes() == before
    same = _outputs(tmp_path, digest=hashlib.sha256(manifest.read_bytes()).hexdigest())
    ok = record(manifest, lock_file, "--outputs", str(same))
    assert ok.returncode == 0, ok.stderr


def test_a_region_missing_from_the_outputs_names_the_outputs_file(files, tmp_path):
    """Review finding 13: a copy missing from the outputs (a partly failed ImageCopy) was blamed on --image."""
    manifest, lock_file = files
    outputs = _outputs(tmp_path, skip=("alicloud/cn-shanghai",))
    r = record(manifest, lock_file, "--outputs", str(outputs))
    assert r.returncode == 2, r.stderr
    assert f"error --outputs {outputs}: images: no image id for alicloud/cn-shanghai" in r.stderr, r.stderr
    assert "error --image" not in r.stderr


def _waiting_on(pid: int, guard) -> bool:
    """Whether process `pid` waits (blocked, `->` in /proc/locks) for an flock on the file `guard`."""
    inode = guard.stat().st_ino
    for line in open("/proc/locks").read().splitlines():
        words = line.split()
        if "->" in words and "FLOCK" in words:
            at = words.index("FLOCK")
            if int(words[at + 3]) == pid and int(words[at + 4].rsplit(":", 1)[1]) == inode:
                return True
    return False


def test_lock_record_waits_for_another_writer_so_neither_entry_is_lost(files, tmp_path):
    """Review finding 12: two `lock record` runs at once read, changed and replaced lock.json each on its own, so one
    entry could be lost. They now take turns on an flock beside the lock file: while another holds it, this one waits
    (seen blocked in /proc/locks, the lock file unchanged), then writes once it is free."""
    import fcntl
    import os
    import time

    manifest, lock_file = files
    guard = lock_file.with_name(f".{lock_file.name}.lock")
    fd = os.open(guard, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a `lock record` of another recipe writing its entry now
    before = lock_file.read_bytes()
    cmd = [sys.executable, "-m", "gpufleet.cli.image", "lock", "record", "-r", RECIPE.name, "-m", str(manifest)]
    cmd += ["--lock", str(lock_file), *[a for w in ALL for a in ("--image", _ids(w))]]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _waiting_on(proc.pid, guard):
            assert proc.poll() is None, f"it did not wait: {proc.communicate()}"
            assert time.monotonic() < deadline, "never blocked on the lock"
            time.sleep(0.05)
        assert lock_file.read_bytes() == before
    finally:
        os.close(fd)  # the other writer is done
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"waiting for another `image lock record` to finish (it holds {guard})" in err
    assert lock.image_for(RECIPE.name, "alicloud", "cn-beijing", lock_file).image_id == "m-cnbeijing0001"
