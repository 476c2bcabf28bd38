"""`gpufleet region new`: each check refuses with a clear message and writes nothing; round trip to preview."""

import json
from pathlib import Path

import pytest
import yaml

from gpufleet import regions, registry, validation
from gpufleet.errors import UserError
from gpufleet.images.recipes import load_recipe
from gpufleet.preview import preview_stack

ROOT = Path(__file__).resolve().parents[1]


def files(project):
    return sorted(p.name for p in (project / "stacks").iterdir())


def refused(project, match, **kw):
    before = files(project)
    with pytest.raises(UserError) as exc:
        regions.plan(root=project, **kw)
    assert match in str(exc.value), str(exc.value)
    assert files(project) == before
    return str(exc.value)


def test_unknown_region_did_you_mean(project):
    refused(project, "did you mean 'cn-beijing'", cloud="alicloud", region="cn-beijng", env="dev")


def test_unknown_zone_did_you_mean(project):
    refused(project, "did you mean 'cn-beijing-h'", cloud="alicloud", region="cn-beijing", env="dev", zones=["cn-beijing-hh"])


def test_gpu_not_sold_names_regions(project):
    msg = refused(
        project, "sells no V100-16G in ap-guangzhou", cloud="tencentcloud", region="ap-guangzhou", env="dev", gpu="V100-16G"
    )
    assert "regions that do: none" in msg
    refused(
        project,
        "ap-guangzhou-7 does not sell A100-40G (zones of ap-guangzhou that do: ap-guangzhou-4)",
        cloud="tencentcloud",
        region="ap-guangzhou",
        env="dev",
        gpu="A100-40G",
        zones=["ap-guangzhou-7"],
    )


@pytest.mark.parametrize("gpu", ["", "   "])
def test_an_empty_gpu_is_refused_not_taken_for_the_default(project, gpu):
    """`--gpu ''` wrote the environment's default GPU (exit 0), where every other empty `region new` option is refused."""
    refused(
        project,
        f"--gpu: is empty: give a GPU kind, or leave --gpu out for the dev default ({regions.defaults('dev')['gpu']})",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
        gpu=gpu,
    )


def test_gpu_missing_in_region_names_others(project, monkeypatch):
    real = regions.catalog.regions

    def fake(cloud):
        out = real(cloud)
        out["cn-beijing"] = {z: [k for k in kinds if k != "A10"] for z, kinds in out["cn-beijing"].items()}
        return out

    monkeypatch.setattr(regions.catalog, "regions", fake)
    msg = refused(project, "sells no A10 in cn-beijing", cloud="alicloud", region="cn-beijing", env="prod")
    assert "cn-hangzhou" in msg and "cn-shanghai" in msg


def test_prod_needs_two_zones(project):
    refused(project, "prod needs at least 2 zones", cloud="alicloud", region="cn-beijing", env="prod", gpu="A100-40G")


def test_cidr_overlap(project):
    msg = refused(
        project,
        "overlaps the VPC of alicloud-cn-hangzhou-prod",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
        cidr="10.20.0.0/16",
    )
    assert "a free /16 is 10.1.0.0/16" in msg  # 10.0/16 is the staging stack's


def test_a_zone_given_twice_is_said_on_zone(project):
    msg = refused(
        project,
        "--zone: cn-beijing-h is given 2 times; name each zone once",
        cloud="alicloud",
        region="cn-beijing",
        env="prod",
        zones=["cn-beijing-h", "cn-beijing-h"],
    )
    assert "fleet.zones" not in msg  # was 'stacks/Pulumi.alicloud-cn-beijing-prod.yaml: fleet.zones: lists a zone twice'


def test_a_bad_zone_given_twice_is_named_once(project):
    """Review F13: its "is not a zone" line was printed once for each time it was given."""
    msg = refused(
        project, "is given 2 times", cloud="alicloud", region="cn-beijing", env="dev", zones=["cn-hangzhou-a", "cn-hangzhou-a"]
    )
    assert msg.count("'cn-hangzhou-a' is not a zone of cn-beijing") == 1, msg


def test_a_cidr_with_host_bits_is_refused_as_the_spec_refuses_them(project):
    # 10.99.0.1/16 was written as 10.99.0.0/16 and reported "as asked"; the spec refuses host bits in its CIDRs
    msg = refused(
        project,
        "--cidr: '10.99.0.1/16' is not a network address (host bits set): did you mean 10.99.0.0/16?",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
        cidr="10.99.0.1/16",
    )
    assert msg.startswith("arguments: --cidr: ")


@pytest.mark.parametrize(
    "cidr, said",
    [
        ("8.8.0.0/16", "--cidr: 8.8.0.0/16 is not a private range"),  # the spec refuses it
        ("10.99.0.0/30", "--cidr: VPC prefix /30 is outside /8 to /24 (e.g. 10.40.0.0/16)"),
        ("172.16.0.0/12", "--cidr: alicloud:vpc/network:Network"),  # the provider contract refuses it (/16 to /28)
        # the template's /24 subnets need a VPC of /23 or wider: it was said on fleet.network, without a fix
        ("10.60.0.0/24", "--cidr: subnet_prefix /24 must be longer than the VPC's /24 (10.60.0.0/24): each zone's subnet"),
    ],
)
def test_a_cidr_the_new_stack_refuses_is_said_on_cidr(project, cidr, said):
    """The stack file is not written: the option given is what to change (the field it became is said after)."""
    msg = refused(project, said, cloud="alicloud", region="cn-beijing", env="dev", cidr=cidr)
    assert msg.startswith("arguments: --cidr: ") and "(stacks/Pulumi.alicloud-cn-beijing-dev.yaml: fleet.network" in msg


def test_a_cidr_with_host_bits_and_a_prefix_no_vpc_takes_is_not_suggested_a_network_no_vpc_takes(project):
    msg = refused(project, "--cidr", cloud="alicloud", region="cn-beijing", env="dev", cidr="10.60.0.0/7")
    assert msg == (
        "arguments: --cidr: '10.60.0.0/7' is not a network address (host bits set), and its VPC prefix /7 is outside "
        "/8 to /24 (e.g. 10.40.0.0/16)"
    )


def test_a_tencent_cidr_wider_than_12_is_refused_on_cidr(project):
    """`--cidr 10.0.0.0/8` for a Tencent stack was written: Tencent CreateVpc takes a /12 at the widest."""
    for f in (project / "stacks").glob("Pulumi.tencentcloud-*.yaml"):  # no Tencent VPC for it to overlap
        f.unlink()
    msg = refused(
        project,
        "--cidr: tencentcloud:Vpc/instance:Instance",
        cloud="tencentcloud",
        region="ap-shanghai",
        env="dev",
        cidr="10.0.0.0/8",
    )
    assert "/12 to /28" in msg and "(stacks/Pulumi.tencentcloud-ap-shanghai-dev.yaml: fleet.network.vpc_cidr)" in msg


def test_a_template_that_renders_no_stack_file_is_said_on_from(project, tmp_path):
    template = tmp_path / "defaults.yaml"
    template.write_text((regions.TEMPLATES / "defaults.yaml").read_text())  # a YAML file that is no stack template
    msg = refused(
        project,
        f"--from: template {template} did not render a stack file (it holds no config: gpufleet:fleet: mapping); "
        "pass a stack template of src/gpufleet/stacks/templates/: stack.yaml.j2",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
        template=str(template),
    )
    assert "'config'" not in msg  # was '...did not render a stack file: 'config'' (a KeyError's text)


def test_the_packages_defaults_yaml_is_no_template(project, tmp_path, monkeypatch):
    """Review L9: `--from defaults.yaml` rendered the package's defaults.yaml (beside the templates, not one of them),
    before a file of that name in the current folder; only the *.j2 names of the templates folder are templates."""
    refused(
        project,
        "--from: no template 'defaults.yaml' in src/gpufleet/stacks/templates/",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
        template="defaults.yaml",
    )
    monkeypatch.chdir(own_template(tmp_path, "defaults.yaml").parent)
    p = regions.plan("alicloud", "cn-shanghai", "dev", template="defaults.yaml", root=project)
    assert "tags: {team: search," in p.text  # the file of the current folder


@pytest.mark.parametrize("given", ["./", ".", "tdir", "tdir/"])
def test_a_folder_given_as_the_template_is_said_on_from(project, tmp_path, monkeypatch, capsys, given):
    """Review L9/F11: `--from ./` said `./: is a folder, not a file` (not naming --from), and `--from tdir` (a folder of
    the current folder, no '/') `no template 'tdir' in .../stacks/templates/`."""
    from gpufleet.cli import main

    (tmp_path / "tdir").mkdir()
    monkeypatch.chdir(tmp_path)
    msg = refused(project, f"--from: {given!r} is a folder, not a template file: give the path of a stack template file",
                  cloud="alicloud", region="cn-shanghai", env="dev", template=given)  # fmt: skip
    assert f"(e.g. a copy of {regions.TEMPLATES_SHOWN}/stack.yaml.j2)" in msg and "(stack.yaml.j2)" in msg
    with pytest.raises(SystemExit) as exc:
        main(["region", "new", "--cloud", "alicloud", "--region", "cn-shanghai", "--env", "dev", "--from", given])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"arguments: --from: {given!r} is a folder" in err and "Traceback" not in err, err


def own_template(folder: Path, name: str = "mine.yaml.j2") -> Path:
    """A copy of the shipped template outside the package and the project, with the team tag changed (a user's own)."""
    text = (regions.TEMPLATES / "stack.yaml.j2").read_text()
    assert "tags: {team: ml-platform," in text
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text.replace("tags: {team: ml-platform,", "tags: {team: search,"))
    return folder / name


def test_a_template_file_of_ones_own_renders_a_stack_that_validates(project, tmp_path, capsys, monkeypatch):
    """`--from` took only a name in the package's stacks/templates/: a wheel user's own template meant editing
    site-packages. A path to a template file renders with the same variables, and the stack is checked as any."""
    from gpufleet.cli import main

    template = own_template(tmp_path / "templates")
    main(["region", "new", "--cloud", "alicloud", "--region", "cn-shanghai", "--env", "dev", "--from", str(template)])
    assert "wrote stacks/Pulumi.alicloud-cn-shanghai-dev.yaml" in capsys.readouterr().out
    spec = validation.load_fleet("alicloud-cn-shanghai-dev", project).spec
    assert spec.tags["team"] == "search" and spec.region == "cn-shanghai"
    # a file named without a '/': taken as a file when the package has no template of that name (as image recipes)
    monkeypatch.chdir(template.parent)
    p = regions.plan("alicloud", "cn-shanghai", "staging", template="mine.yaml.j2", root=project)
    assert yaml.safe_load(p.text)["config"]["gpufleet:fleet"]["tags"]["team"] == "search"


def test_a_template_file_includes_the_files_next_to_it(project, tmp_path):
    template = own_template(tmp_path)
    text = template.read_text().replace("    tags: {team: search,", '{% include "tags.j2" %}\n    tags: {team: search,')
    template.write_text(text)
    (tmp_path / "tags.j2").write_text("    # owned by {{ env }} search")
    p = regions.plan("alicloud", "cn-shanghai", "dev", template=str(template), root=project)
    assert "    # owned by dev search\n    tags: {team: search," in p.text


def test_the_shipped_template_is_still_named_by_its_name(project, tmp_path, monkeypatch):
    """A name of the package's templates is the package's, even with a file of that name in the current folder."""
    own_template(tmp_path, "stack.yaml.j2")
    monkeypatch.chdir(tmp_path)
    p = regions.plan("alicloud", "cn-shanghai", "dev", template="stack.yaml.j2", root=project)
    assert "tags: {team: ml-platform," in p.text
    assert regions.plan("alicloud", "cn-shanghai", "dev", template="./stack.yaml.j2", root=project).text != p.text


def test_a_template_file_that_is_missing_is_refused_on_from(project, tmp_path, capsys):
    from gpufleet.cli import main

    missing = tmp_path / "nope" / "mine.yaml.j2"
    msg = refused(project, f"--from: no such file '{missing}': give the path of a stack template", cloud="alicloud",
                  region="cn-shanghai", env="dev", template=str(missing))  # fmt: skip
    assert "(e.g. a copy of src/gpufleet/stacks/templates/stack.yaml.j2)" in msg and "(stack.yaml.j2)" in msg
    with pytest.raises(SystemExit) as exc:
        main(["region", "new", "--cloud", "alicloud", "--region", "cn-shanghai", "--env", "dev", "--from", "./mine.yaml.j2"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "arguments: --from: no such file './mine.yaml.j2'" in err and "Traceback" not in err
    assert files(project) == files(ROOT)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{{ nope }}", "'nope' is undefined: a template is given api_key_secret, bucket_suffix, cloud,"),
        ("ok\n{% if %}", "line 2: Expected an expression"),
        ('{% include "gone.j2" %}', "includes 'gone.j2', which is not in"),
        ("{{ 1 / 0 }}", "cannot render: ZeroDivisionError"),
    ],
)
def test_a_template_file_that_does_not_render_is_named_with_why(project, tmp_path, text, said):
    template = tmp_path / "bad.j2"
    template.write_text(text)
    msg = refused(project, said, cloud="alicloud", region="cn-shanghai", env="dev", template=str(template))
    assert msg.startswith(f"{template}: "), msg


def test_allocated_cidr_avoids_every_stack(project):
    taken = regions.existing_cidrs("alicloud", project)
    vpc = regions.allocate_cidr(taken)
    import ipaddress

    assert not any(ipaddress.ip_network(vpc).overlaps(n) for n in taken.values())


def test_no_image_in_lock_says_how(project, monkeypatch):
    from gpufleet.stacks import lock

    doc = lock.load()
    del doc["images"]["cuda13-vllm"]["regions"]["alicloud"]["cn-beijing"]
    path = project / "lock.json"
    path.write_text(json.dumps(doc))
    real = lock.image_for
    monkeypatch.setattr(lock, "image_for", lambda r, c, g, path=path: real(r, c, g, path))
    msg = refused(
        project, "no image of recipe 'cuda13-vllm' for alicloud cn-beijing", cloud="alicloud", region="cn-beijing", env="dev"
    )
    assert f"re-run its image pipeline ({project / 'images' / 'program'}/, phase: image)" in msg  # the project's
    assert "`gpufleet image lock record --recipe cuda13-vllm ...`" in msg  # how the copy's id gets into the lock
    assert "images/pipeline.py" not in msg and "(images/recipes/" not in msg  # no such files in the project
    assert "add cn-beijing" not in msg  # the recipe lists cn-beijing already
    monkeypatch.setattr(lock, "recipe_regions", lambda recipe: {"alicloud": ["cn-hangzhou"]})
    # a shipped recipe is copied into the project (whose recipe of that name replaces it), not edited in the package
    refused(
        project,
        "copy the recipe (src/gpufleet/images/recipes/cuda13-vllm.yaml) into "
        f"{project / 'images' / 'recipes'}/ and its lock (src/gpufleet/images/locks/cuda13-vllm.txt) to "
        f"{project / 'images' / 'locks' / 'cuda13-vllm.txt'} (a project's recipe of that name replaces the shipped one) "
        "and add cn-beijing to regions.alicloud there, then re-run its image pipeline",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
    )
    mine = project / "images" / "recipes" / "cuda13-vllm.yaml"  # the project's copy: edited where it is
    mine.parent.mkdir()
    mine.write_text((ROOT / "src" / "gpufleet" / "images" / "recipes" / "cuda13-vllm.yaml").read_text())
    refused(
        project,
        f"add cn-beijing to regions.alicloud of the recipe ({mine}), then re-run",
        cloud="alicloud",
        region="cn-beijing",
        env="dev",
    )


def test_model_not_fitting_gpu(project):
    # staging defaults serve the unquantised 7B on A10; moved to T4 (float16, chosen for it), it does not fit
    refused(
        project,
        "--gpu: Qwen/Qwen2.5-7B-Instruct does not fit 1x T4 as configured",
        cloud="alicloud",
        region="cn-beijing",
        env="staging",
        gpu="T4",
    )


@pytest.mark.parametrize("env, gpu", [("dev", "V100-32G"), ("staging", "T4")])
def test_a_model_not_fitting_names_no_stack_file_that_was_not_written(project, capsys, env, gpu):
    """The refusal pointed at `gpufleet plan fit --stack S` of the stack it had not written (that command failed: no
    such stack file), and offered fixes `region new` has no option for; it gives a `plan fit` that runs."""
    import re

    from gpufleet.cli import main

    said = refused(project, "was not written", cloud="alicloud", region="cn-beijing", env=env, gpu=gpu)
    assert "--stack" not in said and "arguments: --gpu:" in said, said
    cmd = re.search(r"`(gpufleet plan fit --model [^`]*)`", said)
    assert cmd and f"--gpu {gpu}" in cmd[1], said
    with pytest.raises(SystemExit) as exc:
        main(cmd[1].split()[1:])
    out = capsys.readouterr()
    assert exc.value.code == 1 and "does not fit" in out.out + out.err, out  # ran: the same verdict, not a refusal


def test_a_provider_rule_the_new_stack_breaks_is_said_on_its_file(project, monkeypatch):
    """The preview `region new` runs before writing names the stack file it would write, as `gpufleet preview` does
    (it said '<alicloud-cn-beijing-prod>: fleet.autoscaling.schedules: ...')."""
    from gpufleet.components.alicloud import scaling

    monkeypatch.setattr(scaling, "scheduled_task_name", lambda fleet, schedule: "x" * 65)  # over the API's 64
    msg = refused(
        project,
        "stacks/Pulumi.alicloud-cn-beijing-prod.yaml: fleet.autoscaling.schedules: ",
        cloud="alicloud",
        region="cn-beijing",
        env="prod",
    )
    assert "<alicloud-cn-beijing-prod>" not in msg


def test_round_trip_prod_beijing(project):
    p = regions.plan("alicloud", "cn-beijing", "prod", root=project)
    assert not p.path.exists()
    regions.write(p)
    spec = validation.load_fleet("alicloud-cn-beijing-prod", project).spec
    assert len(spec.zones) >= 2 and spec.replicas.min >= 2
    inv = preview_stack("alicloud-cn-beijing-prod", project)
    assert inv.resources
    rules = inv.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")
    ingress = [r for r in rules if r["inputs"].get("type") == "ingress"]
    assert ingress and all(r["inputs"].get("cidrIp") != "0.0.0.0/0" for r in ingress)
    before = p.path.read_text()
    with pytest.raises(UserError, match="already exists"):
        regions.write(regions.plan("alicloud", "cn-beijing", "prod", root=project))
    assert p.path.read_text() == before


def test_cli_dry_run_writes_nothing(project, capsys):
    """docs/environments.md: region new prints what it chose and why, writes stacks/Pulumi.<cloud>-<region>-<env>.yaml
    (`--dry-run` prints it instead), and the new stack previews and prices straight away. So the dry run's standard
    output is the file the real run writes, byte for byte (`--dry-run > file` is that file), its reasons go to
    standard error, and the real run names the file, the same reasons and the two commands to run next."""
    from gpufleet.cli import main

    words = ["region", "new", "--cloud", "alicloud", "--region", "cn-shanghai", "--env", "dev"]
    before = files(project)
    main([*words, "--dry-run"])
    dry = capsys.readouterr()
    assert yaml.safe_load(dry.out)["config"]["gpufleet:fleet"]["region"] == "cn-shanghai"
    assert files(project) == before
    reasons = [line[len("# chose ") :] for line in dry.err.splitlines() if line.startswith("# chose ")]
    assert reasons and "# chose" not in dry.out
    main(words)
    real = capsys.readouterr()
    stack = "alicloud-cn-shanghai-dev"  # <cloud>-<region>-<env> (--name's help)
    assert (project / "stacks" / f"Pulumi.{stack}.yaml").read_text() == dry.out
    assert real.out.splitlines() == [
        f"wrote stacks/Pulumi.{stack}.yaml",
        *(f"  chose {r}" for r in reasons),
        f"next: gpufleet preview --stack {stack}; gpufleet cost estimate --stack {stack}",
    ]


def test_cli_dry_run_of_an_existing_stack_is_refused_like_the_real_run(project, capsys):
    from gpufleet.cli import main

    before = (project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text()
    with pytest.raises(SystemExit) as exc:
        main(["region", "new", "--cloud", "alicloud", "--region", "cn-hangzhou", "--env", "prod", "--dry-run"])
    assert exc.value.code == 2
    assert "already exists" in capsys.readouterr().err
    assert (project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text() == before


def test_prod_with_one_named_zone_says_how_many_the_region_has(project):
    message = refused(project, "add another --zone", cloud="alicloud", region="cn-beijing", env="prod", zones=["cn-beijing-h"])
    assert "cn-beijing sells A10 in 5" in message and "you gave 1 (cn-beijing-h)" in message


def test_a_gpu_without_bf16_gets_float16_and_says_why(project):
    p = regions.plan("tencentcloud", "ap-guangzhou", "staging", gpu="V100-32G", name="tc-v100", fleet="v100", root=project)
    assert "dtype: float16" in p.text
    assert any(r.startswith("dtype float16: staging defaults to bfloat16") for r in p.reasons)


def test_a_placeholder_image_is_not_called_locked(project):
    """issue 27: images/lock.json ships placeholder ids; `region new` says so instead of "locked", and says locked (with
    the id) only for an image that was recorded."""
    p = regions.plan("alicloud", "cn-beijing", "dev", root=project)
    said = next(r for r in p.reasons if r.startswith("image recipe"))
    assert "placeholder" in said and "locked for" not in said and "gpufleet image build" in said, said
    lock = project / "images" / "lock.json"
    doc = json.loads(lock.read_text())
    recipe = said.split()[2].rstrip(":")  # "image recipe NAME: ..."
    doc["images"][recipe]["pins"] = load_recipe(recipe).pins  # a built entry records its pins, as `lock record` does
    where = doc["images"][recipe]["regions"]
    where["alicloud"]["cn-beijing"] = {"image_id": "m-2ze0built0image0id", "manifest_sha256": "0" * 64, "placeholder": False}
    lock.write_text(json.dumps(doc))
    said = next(r for r in regions.plan("alicloud", "cn-beijing", "dev", root=project).reasons if r.startswith("image recipe"))
    assert "locked for alicloud cn-beijing" in said and "m-2ze0built0image0id" in said and "placeholder" not in said, said


def test_the_template_folder_the_help_and_errors_name_exists(project, capsys):
    """`region new --from` names templates of a folder that exists (the package's, not the project's stacks/)."""
    import re

    from gpufleet.cli import main

    main(["region", "new", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    named = set(re.findall(r"([\w./-]*templates/)", helped))
    assert named, helped
    for folder in named:  # a folder of the package (checkout or installed), the one the templates are read from
        assert (regions.TEMPLATES.parents[1] / folder).resolve() == regions.TEMPLATES.resolve(), folder
    assert (regions.TEMPLATES / "stack.yaml.j2").is_file() and (regions.TEMPLATES / "defaults.yaml").is_file()
    with pytest.raises(SystemExit) as exc:
        main(["region", "new", "--cloud", "alicloud", "--region", "cn-shanghai", "--env", "dev", "--from", "nope.j2"])
    assert exc.value.code == 2
    assert (
        "--from: no template 'nope.j2' in src/gpufleet/stacks/templates/ (choose one of: stack.yaml.j2)"
        in capsys.readouterr().err
    )
    assert files(project) == files(ROOT)


def test_every_region_region_new_offers_has_a_price_catalog_and_a_locked_image():
    """The fleet as a whole: each (cloud, region) of the catalog that `region new` offers, and each GPU sold there,
    has a price catalog with a row for the catalog's default instance type (a missing price is a row marked missing)
    and an image of the recipe serving that GPU in images/lock.json (a placeholder counts)."""
    from gpufleet.cost import catalog as prices
    from gpufleet.stacks import catalog, lock

    gaps = []
    for cloud in catalog.clouds():
        for region, zones in catalog.regions(cloud).items():
            if region not in prices.regions(cloud):
                gaps.append(f"{cloud} {region}: no price catalog")
                continue
            rows = prices.load(cloud, region)
            for gpu in sorted({g for kinds in zones.values() for g in kinds}):
                itype = catalog.default_instance_type(cloud, gpu, 1)
                if itype is not None and rows.get(f"instance/{itype.type}", "payg") is None:
                    gaps.append(f"{cloud} {region}: no price row for {itype.type} ({gpu})")
                ref = lock.image_for(regions.recipe_for(gpu), cloud, region, ROOT / "images" / "lock.json")
                if isinstance(ref, str):
                    gaps.append(f"{cloud} {region} {gpu}: {ref}")
    assert gaps == []


def test_a_project_without_its_program_says_so_not_a_traceback(project, capsys):
    """A project made by hand (Pulumi.yaml, stacks/, then `region new`) may lack stacks/__main__.py: region new wrote
    the stack, and the next `gpufleet check` / `preview` ended in FileNotFoundError's traceback."""
    from gpufleet.cli import main

    (project / "stacks" / "__main__.py").unlink()
    regions.write(regions.plan("tencentcloud", "ap-shanghai", "dev", root=project))
    for args in (["check"], ["preview", "--stack", "tencentcloud-ap-shanghai-dev"]):
        with pytest.raises(SystemExit) as exc:
            main(args)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "Traceback" not in err, err
        assert "stacks/__main__.py: missing: the Pulumi program" in err


def test_a_name_read_as_another_fleets_is_refused_on_name(project):
    """`--name tencentcloud-ap-shanghai-prod-x` for an alicloud cn-shanghai dev fleet was written, and then every
    command refused the file ('the stack's name ... says cloud tencentcloud ...; rename the file')."""
    msg = refused(
        project,
        "--name: 'tencentcloud-ap-shanghai-prod-x' reads as a stack of tencentcloud ap-shanghai prod",
        cloud="alicloud",
        region="cn-shanghai",
        env="dev",
        name="tencentcloud-ap-shanghai-prod-x",
        fleet="zz",
    )
    assert "leave --name out (alicloud-cn-shanghai-dev-zz)" in msg
    for name in ("alicloud-cn-shanghai-dev-zz", "zz-shanghai"):  # this fleet's form, or no form: written
        regions.write(regions.plan("alicloud", "cn-shanghai", "dev", name=name, fleet="zz", root=project))
        assert validation.load_fleet(name, project).spec.region == "cn-shanghai"
        (project / "stacks" / f"Pulumi.{name}.yaml").unlink()


@pytest.mark.parametrize(
    "text, said",
    [
        (b"import pulumi\ndef (:\n", "stacks/__main__.py:2:5: not valid Python (invalid syntax): the Pulumi program"),
        (b"x = 1\x00\n", "null bytes"),  # 3.11: ValueError "source code string cannot ..."; 3.12: a SyntaxError
        (b"import pulumi\nimport nosuchmodule\n", "__main__.py:2:1: the program failed (ModuleNotFoundError: No module"),
        (
            b"from gpufleet.validation import load_fleet\ndeclare_progam(load_fleet('x'))\n",
            "__main__.py:2:1: the program failed (NameError: name 'declare_progam' is not defined)",
        ),
    ],
)
def test_a_broken_program_is_named_with_its_line_not_a_traceback(project, capsys, text, said):
    """stacks/__main__.py is the user's to edit: a syntax error in it, or a name it misspells, was a traceback from
    `preview` (and a failed program's pending registrations each printed "Task was destroyed but it is pending!")."""
    from gpufleet.cli import main

    regions.write(regions.plan("tencentcloud", "ap-shanghai", "dev", root=project))  # region new stops on a broken program
    (project / "stacks" / "__main__.py").write_bytes(text)
    with pytest.raises(SystemExit) as exc:
        main(["preview", "--stack", "tencentcloud-ap-shanghai-dev"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert said in err and "stacks/__main__.py" in err and "Task was destroyed" not in err, err
    assert "put it back as `gpufleet init` writes it" in err, err


@pytest.mark.parametrize(
    "exit_line, why",
    [
        (b"import sys\nsys.exit(0)\n", "(SystemExit: 0)"),
        (b"raise SystemExit(3)\n", "(SystemExit: 3)"),
        (b"import sys\nsys.exit('boom')\n", "(SystemExit: boom)"),
        (b"import sys\nsys.exit()\n", "(SystemExit)"),
    ],
)
def test_a_program_that_exits_is_a_failed_program_not_a_pass(project, capsys, tmp_path, exit_line, why):
    """A sys.exit() in stacks/__main__.py ended gpufleet with the program's own code: `check` and `preview -o` exited 0
    having checked and written nothing, and `region new` exited 0 writing nothing and saying nothing."""
    from gpufleet.cli import main

    shipped = (ROOT / "stacks" / "__main__.py").read_bytes()
    (project / "stacks" / "__main__.py").write_bytes(exit_line + shipped)
    line = exit_line.count(b"\n")
    out = tmp_path / "preview.json"
    before = files(project)
    for args in (
        ["check"],
        ["preview", "--stack", "alicloud-cn-hangzhou-prod", "--json", "-o", str(out)],
        ["region", "new", "--cloud", "alicloud", "--region", "cn-beijing", "--env", "dev"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(args)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "Traceback" not in err, (args, err)
        assert f"stacks/__main__.py:{line}:1: the program failed {why}" in err, (args, err)
    assert not out.exists() and files(project) == before


def test_an_error_raised_inside_gpufleet_is_a_bug_shown_as_one_not_the_programs_failure(project, capsys, monkeypatch):
    """The program calls into gpufleet (declare_program); an exception raised there, not on a line of
    stacks/__main__.py, is gpufleet's bug: it propagates with its traceback (preview.py: "a bug, shown as one"), never
    "stacks/__main__.py:L:C: the program failed" with a line and column of another file and advice to put the program
    back, which would send the user to mend a file that is fine."""
    from gpufleet.cli import main
    from gpufleet.components import fleet

    def declare_program(_fleet):
        raise RuntimeError("a bug inside gpufleet")

    monkeypatch.setattr(fleet, "declare_program", declare_program)
    with pytest.raises(RuntimeError, match="a bug inside gpufleet"):
        main(["preview", "--stack", "alicloud-cn-hangzhou-prod"])
    err = capsys.readouterr().err
    assert "the program failed" not in err and "put it back" not in err, err


def test_a_program_failing_after_it_declared_resources_leaves_no_pending_task_behind(project, tmp_path):
    """A program that fails after declare_program leaves its registrations' RPCs waiting: each printed "Task was
    destroyed but it is pending!" under the error when the process ended (a subprocess: in-process they are collected
    after the test has read standard error)."""
    import os
    import subprocess
    import sys

    shipped = (ROOT / "stacks" / "__main__.py").read_bytes()
    (project / "stacks" / "__main__.py").write_bytes(shipped + b'raise RuntimeError("late")\n')
    line = shipped.count(b"\n") + 1
    gpufleet = Path(sys.executable).with_name("gpufleet")
    env = {**os.environ, "GPUFLEET_PROJECT": str(project), "COLUMNS": "400"}
    done = subprocess.run(
        [str(gpufleet), "preview", "--stack", "alicloud-cn-hangzhou-prod"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert f"stacks/__main__.py:{line}:1: the program failed (RuntimeError: late)" in done.stderr, done.stderr
    assert "Task was destroyed" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_what_the_program_prints_goes_to_stderr_not_into_the_json(project, capsys):
    """A print() in stacks/__main__.py came out first on standard output and `preview --json` was no longer JSON."""
    from gpufleet.cli import main

    shipped = (ROOT / "stacks" / "__main__.py").read_bytes()
    (project / "stacks" / "__main__.py").write_bytes(b'print("hello from program")\n' + shipped)
    main(["preview", "--stack", "alicloud-cn-hangzhou-prod", "--json"])
    captured = capsys.readouterr()
    assert json.loads(captured.out)["stack"] == "alicloud-cn-hangzhou-prod"
    assert "hello from program" in captured.err


def test_a_tencent_prod_stack_notifies_its_template_not_nobody(project):
    """`region new --cloud tencentcloud --env prod` wrote `contact_group: llm-oncall`, which the Tencent program turns
    into alarm policies without notification (preview: a note). The default takes the form Tencent's alarms notify (a
    Cloud Monitor notification template id, the profile's example_contact_group), as the shipped Tencent stacks have."""
    p = regions.plan("tencentcloud", "ap-shanghai", "prod", root=project)
    regions.write(p)
    spec = validation.load_fleet("tencentcloud-ap-shanghai-prod", project).spec
    assert spec.alarms.contact_group == "notice-prod-llmoncall"
    assert not [n for n in registry.notes("tencentcloud", spec) if "without notification" in n]
    policies = preview_stack("tencentcloud-ap-shanghai-prod", project).of_type("tencentcloud:Monitor/alarmPolicy:AlarmPolicy")
    assert policies and all(r["inputs"].get("noticeIds") == ["notice-prod-llmoncall"] for r in policies)
    said = next(r for r in p.reasons if r.startswith("alarms.contact_group"))
    assert "placeholder" in said and "--contact-group" in said, said
    assert "  # example value: put the contact your alarms notify here" in p.text


@pytest.mark.parametrize("env", ["dev", "staging", "prod"])
@pytest.mark.parametrize("cloud", registry.names())
def test_every_clouds_default_contact_is_one_its_alarms_notify(cloud, env):
    d = regions.defaults(env)
    contact, _ = regions.chosen_contact_group(cloud, env, None, d)
    assert registry.module(cloud, "checks").contact_group_problem(contact) is None, contact


def test_a_contact_group_the_cloud_would_notify_nobody_with_is_refused_on_the_option(project, capsys):
    from gpufleet.cli import main

    message = refused(
        project, "--contact-group: 'llm-oncall' is not a Cloud Monitor notification template id (notice-...)",
        cloud="tencentcloud", region="ap-shanghai", env="prod", contact_group="llm-oncall",
    )  # fmt: skip
    assert "create a template in Cloud Monitor and give its id" in message
    # the bare prefix names no template (it was taken as one)
    refused(project, "--contact-group: 'notice-' is not a Cloud Monitor notification template id (notice-...)",
            cloud="tencentcloud", region="ap-shanghai", env="prod", contact_group="notice-")  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(
            ["region", "new", "--cloud", "tencentcloud", "--region", "ap-shanghai", "--env", "prod", "--contact-group", "oncall"]
        )
    assert exc.value.code == 2 and "arguments: --contact-group: 'oncall' is not" in capsys.readouterr().err
    assert files(project) == files(ROOT)
    # a form the spec refuses is said on the option too, with the field it became
    refused(project, "arguments: --contact-group: '' (0 characters) is not a contact group name",
            cloud="alicloud", region="cn-beijing", env="prod", contact_group="")  # fmt: skip


@pytest.mark.parametrize(
    "cloud, region, contact",
    [
        ("tencentcloud", "ap-shanghai", "notice-0a1b2c3d"),
        ("alicloud", "cn-beijing", "llm-oncall"),
        ("alicloud", "cn-beijing", "ops #1: on"),  # plain YAML would read 'ops', then refuse ': on'
        ("alicloud", "cn-beijing", "on"),  # plain YAML 1.1 reads true
        ("alicloud", "cn-beijing", "值班组"),
    ],
)
def test_a_given_contact_group_is_written_as_given(project, cloud, region, contact):
    p = regions.plan(cloud, region, "prod", contact_group=contact, root=project)
    assert yaml.safe_load(p.text)["config"]["gpufleet:fleet"]["alarms"]["contact_group"] == contact
    assert f"alarms.contact_group {contact}: as given (--contact-group)" in p.reasons
    assert "example value: put the contact" not in p.text
    regions.write(p)
    assert validation.load_fleet(p.stack, project).spec.alarms.contact_group == contact


def test_the_variables_a_template_file_is_given_are_the_ones_the_docs_list(project, tmp_path):
    """docs/environments.md lists what a template of one's own may use; the message of an undefined one points there."""
    import re

    template = tmp_path / "bad.j2"
    template.write_text("{{ nope }}")
    msg = refused(project, "(docs/environments.md)", cloud="alicloud", region="cn-shanghai", env="dev", template=str(template))
    given = msg.split("a template is given ", 1)[1].split(" (docs/environments.md)")[0].split(", ")
    doc = (ROOT / "docs" / "environments.md").read_text()
    listed = doc.split("with these variables:", 1)[1].split("What it renders", 1)[0]
    assert sorted(re.findall(r"`(\w+)`", listed)) == sorted(given)
