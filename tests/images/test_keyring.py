"""The keyring check the apt-repos step renders, run by bash against real gpg keyrings made here."""

import os
import subprocess

import pytest
from tools import require

from gpufleet.images.recipes import load_recipe
from gpufleet.images.templating import environment


def _key(home, email: str) -> str:
    env = {**os.environ, "GNUPGHOME": str(home)}
    subprocess.run(
        ["gpg", "--batch", "--passphrase", "", "--quick-generate-key", email, "ed25519", "sign", "never"],
        env=env,
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        ["gpg", "--batch", "--with-colons", "--fingerprint", email], env=env, check=True, capture_output=True, text=True
    ).stdout
    return next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr"))


def _keyring(home, path, *emails):
    env = {**os.environ, "GNUPGHOME": str(home)}
    data = subprocess.run(["gpg", "--batch", "--export", *emails], env=env, check=True, capture_output=True).stdout
    path.write_bytes(data)
    return path


def _verifies(repo, path) -> bool:
    recipe = load_recipe("cuda13-vllm")
    macro = environment(recipe).get_template("keyring.j2").module.verified
    script = str(macro(repo, str(path)))
    return (
        subprocess.run(
            ["bash", "-c", script], env={**os.environ, "GNUPGHOME": str(path.parent / "empty-home")}, capture_output=True
        ).returncode
        == 0
    )


@pytest.fixture
def keys(tmp_path):
    require("gpg", "gpg")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    (tmp_path / "empty-home").mkdir(mode=0o700)
    try:
        yield home, _key(home, "repo@example.org"), _key(home, "other@example.org")
    finally:  # gpg starts an agent per home folder that would outlive the suite
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True)


def test_fingerprint_pins_the_only_key(keys, tmp_path):
    home, good, other = keys
    repo = load_recipe("cuda13-vllm").apt_repos[0].model_copy(update={"keyring_fingerprint": good})
    assert _verifies(repo, _keyring(home, tmp_path / "good.gpg", "repo@example.org"))
    assert not _verifies(repo, _keyring(home, tmp_path / "other.gpg", "other@example.org"))
    assert not _verifies(repo, _keyring(home, tmp_path / "both.gpg", "repo@example.org", "other@example.org"))
    (tmp_path / "junk.gpg").write_bytes(b"<html>not a keyring</html>")
    assert not _verifies(repo, tmp_path / "junk.gpg")


def test_sha256_when_given(keys, tmp_path):
    import hashlib

    home, good, _ = keys
    ring = _keyring(home, tmp_path / "good.gpg", "repo@example.org")
    repo = (
        load_recipe("cuda13-vllm")
        .apt_repos[0]
        .model_copy(update={"keyring_sha256": hashlib.sha256(ring.read_bytes()).hexdigest()})
    )
    assert _verifies(repo, ring)
    ring.write_bytes(ring.read_bytes() + b"\0")
    assert not _verifies(repo, ring)


def test_shipped_recipes_pin_nvidias_key():
    for name in ("cuda13-vllm", "cuda12-vllm-v100"):
        repo = load_recipe(name).apt_repos[0]
        assert repo.keyring_fingerprint == "EB693B3035CD5710E231E123A4B469963BF863CC" and repo.keyring_fingerprint_source
