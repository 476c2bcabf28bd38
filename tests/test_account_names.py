"""One account, many stacks: every cloud-side name unique in the scope its vendor documents (gpufleet/namescope.py).

The shipped stacks, `region new` stacks for a second region of each cloud and a second prod fleet in one region are
previewed together as in one account; an injected clash is refused naming both stacks and the scope.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gpufleet import account, namescope, naming, regions
from gpufleet.cli import main
from gpufleet.errors import UserError
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[1]


def _write(project, **kw):
    return regions.write(regions.plan(root=project, **kw))


def _edit(project, stack, **fields):
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["gpufleet:fleet"].update(fields)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_shipped_stacks_second_regions_and_a_second_fleet_coexist(project):
    _write(project, cloud="alicloud", region="cn-shanghai", env="prod")
    _write(project, cloud="tencentcloud", region="ap-shanghai", env="prod")
    _write(project, cloud="alicloud", region="cn-hangzhou", env="prod", fleet="qwen")
    _write(project, cloud="tencentcloud", region="ap-guangzhou", env="prod", fleet="qwen")
    assert "alicloud-cn-hangzhou-prod-qwen" in loader.stack_names(project)
    report = account.check(project)
    assert report.problems == [] and report.clashes == []
    assert len(report.stacks["alicloud"]) == 5 and len(report.stacks["tencentcloud"]) == 5
    scoped = [n for n in report.names if n.rule.scope in ("account", "region")]
    # every account- or region-wide name each stack sends (roles, policies, groups, rules, schedules, functions)
    assert len(scoped) > 40
    assert {n.rule.type for n in scoped} >= {"alicloud:ram/role:Role", "tencentcloud:As/scalingGroup:ScalingGroup"}
    # a second fleet gets its own API key (it shared gpufleet-prod-vllm-api-key with the first), the first keeps its name
    key = {
        s: loader.read_stack_config(s, project)[1][loader.CONFIG_KEY]["serving"]["api_key_secret"]
        for s in loader.stack_names(project)
    }
    assert key["alicloud-cn-hangzhou-prod-qwen"] == "gpufleet-prod-qwen-vllm-api-key"
    assert key["alicloud-cn-shanghai-prod"] == key["alicloud-cn-hangzhou-prod"] == "gpufleet-prod-vllm-api-key"


def test_before_names_were_scoped_two_regions_clashed_in_the_account(project):
    """What issue 26 reported: names from <name>-<env> alone (the old prefix) collide across regions."""
    _write(project, cloud="alicloud", region="cn-shanghai", env="prod")
    for stack in ("alicloud-cn-hangzhou-prod", "alicloud-cn-shanghai-prod"):
        _edit(project, stack, name_base="llm-prod")
    report = account.check(project, "alicloud")
    clash = {(c.value, c.scope) for c in report.clashes}
    assert ("llm-prod-node", "the alicloud account") in clash  # the node's RAM role
    assert ("llm-prod-asg-drain", "the alicloud account") in clash  # the OOS drain role and policy
    assert all(c.stacks == ("alicloud-cn-hangzhou-prod", "alicloud-cn-shanghai-prod") for c in report.clashes)
    # said on the field the names come from, with the fix (it named fleet.name, which both left at its default)
    problem = account.clash_problems(report, "alicloud-cn-shanghai-prod")[0]
    assert problem.path == "fleet.name_base"
    assert problem.message.endswith(
        "; give alicloud-cn-hangzhou-prod or alicloud-cn-shanghai-prod another name_base (or remove it: the default "
        "<name>-<region>-<environment> is unique per stack)"
    )


def test_an_injected_clash_is_refused_naming_both_stacks_and_the_scope(project, capsys):
    shutil.copy(
        project / "stacks" / "Pulumi.tencentcloud-ap-guangzhou-prod.yaml",
        project / "stacks" / "Pulumi.tencentcloud-ap-guangzhou-prod-copy.yaml",
    )
    with pytest.raises(SystemExit) as exc:
        main(["check", "--cloud", "tencentcloud"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "AutoScalingGroupName" in x)
    assert "'llm-ap-guangzhou-prod-asg-group'" in line
    assert "tencentcloud-ap-guangzhou-prod and tencentcloud-ap-guangzhou-prod-copy" in line
    assert "unique in the tencentcloud account" in line
    assert ": fleet.name: " in line and line.endswith("another name")
    assert "CAM" in err or "cam v20190116" in err  # the roles too


def test_check_refuses_a_stack_file_whose_name_is_no_stack_name(project, capsys):
    """stacks/Pulumi.é-dev.yaml was previewed (its names reported as clashes), though every command refuses é-dev."""
    shutil.copy(project / "stacks" / "Pulumi.alicloud-cn-hangzhou-dev.yaml", project / "stacks" / "Pulumi.é-dev.yaml")
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "error stacks/Pulumi.é-dev.yaml: 'é-dev' is not a stack name" in err, err
    assert "declared by stacks" not in err


def test_check_reports_every_broken_stack_and_cloud_filters_before_previewing(project, capsys):
    """`check` stopped at the first stack file that did not validate (the others' problems unseen, one re-run per
    file), and `--cloud tencentcloud` was refused for a broken alicloud file."""
    for stack in ("alicloud-cn-hangzhou-dev", "tencentcloud-ap-guangzhou-dev"):
        (project / "stacks" / f"Pulumi.{stack}.yaml").write_text("config: [\n")
    prod = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml"
    doc = yaml.safe_load(prod.read_text())
    doc["config"]["gpufleet:fleet"]["replicas"]["min"] = -1
    prod.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    for said in (
        "error stacks/Pulumi.alicloud-cn-hangzhou-dev.yaml:2:1: not valid YAML",
        "error stacks/Pulumi.tencentcloud-ap-guangzhou-dev.yaml:2:1: not valid YAML",
        "error stacks/Pulumi.alicloud-cn-hangzhou-prod.yaml: fleet.replicas.min",
    ):
        assert said in err, err
    with pytest.raises(SystemExit) as exc:
        main(["check", "--cloud", "tencentcloud"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "alicloud" not in err and "tencentcloud-ap-guangzhou-dev.yaml:2:1" in err, err
    (project / "stacks" / "Pulumi.tencentcloud-ap-guangzhou-dev.yaml").unlink()
    main(["check", "--cloud", "tencentcloud"])  # the broken alicloud stacks are not this cloud's
    out = capsys.readouterr().out
    assert "tencentcloud: 2 stacks previewed together" in out and "alicloud:" not in out, out


def _counted_in_the_goldens() -> tuple[dict[str, int], dict[str, int]]:
    """Per cloud, over its shipped stacks: the names its resources send that components/<cloud>/name_scopes.yaml has a
    rule for (a `ref` is checked where it points), and those of them unique in the account or in a region. Counted from
    tests/goldens/ (the resources each stack declares) and the scope data, not by gpufleet."""
    names: dict[str, int] = {}
    scoped: dict[str, int] = {}
    for golden in sorted((ROOT / "tests" / "goldens").glob("*.json")):
        cloud = golden.stem.split("-")[0]
        data = yaml.safe_load((ROOT / "src" / "gpufleet" / "components" / cloud / "name_scopes.yaml").read_text())
        rules = {(r["type"], r["input"]): r for r in data["names"]}
        for r in json.loads(golden.read_text())["resources"]:
            for key, value in r["inputs"].items():
                rule = rules.get((r["type"], key))
                if rule is None or "ref" in rule or not isinstance(value, str):
                    continue
                names[cloud] = names.get(cloud, 0) + 1
                scoped[cloud] = scoped.get(cloud, 0) + (rule.get("scope") in ("account", "region"))
    return names, scoped


def _check(argv, capsys):
    try:
        main(argv)
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    return capsys.readouterr()


def test_check_passes_the_shipped_stacks(project, capsys, tmp_path):
    out = _check(["check"], capsys).out
    assert "alicloud: 3 stacks previewed together" in out and "no name used twice in its scope" in out
    # each cloud's line counts that cloud's names (both clouds checked at once), and its account- or region-wide ones
    names, scoped = _counted_in_the_goldens()
    assert set(names) == {"alicloud", "tencentcloud"} and all(scoped.values())
    lines = out.splitlines()
    assert len(lines) == 2
    for cloud, line in zip(sorted(names), lines, strict=True):
        assert line.startswith(f"{cloud}: 3 stacks previewed together (")
        assert f"): {names[cloud]} names, {scoped[cloud]} account- or region-wide; " in line, line
    doc = json.loads(_check(["check", "--json"], capsys).out)
    assert doc["names"] == sum(names.values()) and doc["account_or_region_scoped"] == sum(scoped.values())
    # -o FILE: the lines are the result, written and not announced (check passes silently but for its result)
    written = _check(["check", "-o", str(tmp_path / "check.txt")], capsys)
    assert written.out == written.err == "" and (tmp_path / "check.txt").read_text() == out


@pytest.mark.parametrize(
    ("remove", "argv"),
    [("Pulumi.*.yaml", ["check"]), ("Pulumi.tencentcloud-*.yaml", ["check", "--cloud", "tencentcloud", "--json"])],
)
def test_check_of_no_stack_is_refused_not_passed(project, capsys, remove, argv):
    """A project without stacks (or --cloud of a cloud it has none of) printed an empty line and exited 0: a check
    that checked nothing passed."""
    for f in (project / "stacks").glob(remove):
        f.unlink()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    assert exc.value.code == 2 and out.out == "", out
    assert f"error {project / 'stacks'}: no stack" in out.err and "nothing to check" in out.err


def test_check_reads_each_stacks_usage_profile_as_cost_does(project, capsys):
    """preview does not read gpufleet:usage; check does, so a broken profile fails before the first cost report."""
    (project / "cost" / "usage" / "alicloud-cn-hangzhou-prod.yaml").write_text("replicas_averag: 3\n")
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "alicloud-cn-hangzhou-prod.yaml: replicas_averag: unknown usage key" in err, err


def test_region_new_refuses_a_stack_that_would_clash_and_writes_nothing(project):
    before = sorted(p.name for p in (project / "stacks").iterdir())
    with pytest.raises(UserError) as exc:
        regions.plan(root=project, cloud="alicloud", region="cn-hangzhou", env="prod", name="alicloud-cn-hangzhou-prod-b")
    text = str(exc.value)
    assert "RAM CreateRole.RoleName 'llm-cn-hangzhou-prod-node'" in text
    assert "alicloud-cn-hangzhou-prod and alicloud-cn-hangzhou-prod-b" in text and "the alicloud account" in text
    assert "--fleet" in text
    assert sorted(p.name for p in (project / "stacks").iterdir()) == before


def test_long_names_are_cut_within_every_documented_limit(project):
    _write(project, cloud="tencentcloud", region="ap-shanghai", env="staging", fleet="a-very-long-fleet-nam")
    report = account.check(project, "tencentcloud")
    assert report.problems == [] and report.clashes == []
    stack = "tencentcloud-ap-shanghai-staging-a-very-long-fleet-nam"
    mine = [n for n in report.names if n.stack == stack]
    assert mine and all(n.rule.max is None or len(n.value.encode()) <= n.rule.max for n in mine)
    base = naming.fit("a-very-long-fleet-nam-ap-shanghai-staging", naming.BASE_MAX)
    assert len(base) <= naming.BASE_MAX and all(n.value.startswith(base) for n in mine if n.rule.scope == "account")


def test_alicloud_schedule_names_are_cut_within_the_providers_limit(project):
    """ESS scheduled task names are <group base>-<schedule>: base (up to 32) + a schedule name (up to 31) passed the
    provider's 40 (`region new --fleet qwen25-coder` for alicloud prod rendered nothing: 'length 42 is outside 2-40')."""
    from gpufleet.components.alicloud import rules

    _write(project, cloud="alicloud", region="cn-hangzhou", env="prod", fleet="qwen25-coder")
    report = account.check(project, "alicloud")
    assert report.problems == [] and report.clashes == []
    tasks = [
        n.value
        for n in report.names
        if n.stack == "alicloud-cn-hangzhou-prod-qwen25-coder" and n.rule.type == "alicloud:ess/scheduledTask:ScheduledTask"
    ]
    assert len(set(tasks)) == 2 and all(len(t) <= rules.SCHEDULED_TASK_NAME_MAX for t in tasks)
    assert "qwen25-coder-cn-hangzhou-prod-night" in tasks  # short enough: as before
    # 42 characters: the API takes 2-64 (review B2: it was cut to 40 with a digest)
    assert "qwen25-coder-cn-hangzhou-prod-business-day" in tasks
    assert naming.fit("qwen25-coder-cn-hangzhou-prod-business-day", rules.SCHEDULED_TASK_NAME_MAX) in tasks


def test_region_new_says_which_stacks_names_it_could_not_compare(project):
    """A stack file that does not validate is skipped (one broken file must not stop opening a region), but its names
    were then not compared, silently: a new stack clashing with it was written without a word."""
    _edit(project, "alicloud-cn-hangzhou-prod", replicas={"min": 9, "max": 8, "desired": 2})  # does not validate
    _edit(project, "tencentcloud-ap-guangzhou-prod", replicas={"min": 9, "max": 8, "desired": 2})  # another cloud's
    p = regions.plan(root=project, cloud="alicloud", region="cn-hangzhou", env="prod", name="alicloud-cn-hangzhou-prod-b")
    unseen = [r for r in p.reasons if r.startswith("names without comparing them")]
    assert len(unseen) == 1 and "those of alicloud-cn-hangzhou-prod (its file does not validate" in unseen[0]
    assert "`gpufleet check` compares them once it does" in unseen[0]


def test_fit_is_stable_and_distinct():
    a, b = "x" * 40 + "-one", "x" * 40 + "-two"
    assert naming.fit(a, 32) == naming.fit(a, 32) != naming.fit(b, 32)
    assert naming.fit("short", 32) == "short"


def test_stack_problems_catch_a_name_over_its_limit_and_a_duplicate():
    rule = (namescope.load("tencentcloud") or {})[("tencentcloud:As/scalingGroup:ScalingGroup", "scalingGroupName")]
    assert rule.max == 55 and rule.scope == "account" and "在您账号中必须唯一" in rule.text
    resources = [
        {"type": rule.type, "name": "g1", "custom": True, "inputs": {"scalingGroupName": "g" * 56}},
        {"type": rule.type, "name": "g2", "custom": True, "inputs": {"scalingGroupName": "dup"}},
        {"type": rule.type, "name": "g3", "custom": True, "inputs": {"scalingGroupName": "dup"}},
        {"type": "tencentcloud:Foo/bar:Bar", "name": "f", "custom": True, "inputs": {"fooName": "x"}},
    ]
    names, unknown = namescope.names_of(resources, "s", "tencentcloud", "ap-guangzhou")
    problems = namescope.stack_problems(names, unknown)
    assert any("more than the 55" in p for p in problems)
    assert any("'dup' is given to g2, g3" in p for p in problems)
    assert any("tencentcloud:Foo/bar:Bar fooName" in p for p in problems)


def test_legacy_base_keeps_the_live_names_of_a_deployed_stack(project):
    """A stack deployed before: fleet.name_base = the old prefix keeps every role, policy and group name, so
    `pulumi up` replaces none of them (the logical names, and so the URNs, never changed)."""
    _edit(project, "alicloud-cn-hangzhou-prod", name_base="llm-prod")
    report = account.check(project, "alicloud")
    values = {(n.rule.type, n.value) for n in report.names if n.stack == "alicloud-cn-hangzhou-prod"}
    assert ("alicloud:ram/role:Role", "llm-prod-node") in values  # the names main declared
    assert ("alicloud:ram/policy:Policy", "llm-prod-role-node") in values
    assert ("alicloud:ess/scalingGroup:ScalingGroup", "llm-prod-asg-group") in values


def _schedules(n: int, prefix: str) -> dict:
    return {"schedules": [{"name": f"{prefix}{i:02d}", "cron": "0 1 * * *", "min": 1, "max": 1} for i in range(n)]}


def test_an_account_wide_quota_is_added_up_over_the_region(project, capsys):
    """ESS scheduled tasks are a quota of the account in a region (components/alicloud/checks.py): three stacks of
    cn-hangzhou that each fit it together exceed it; `gpufleet check` refuses, naming each stack's share and the quota."""
    from gpufleet import registry

    cap = registry.list_caps("alicloud")["autoscaling.schedules"]
    assert cap.scope == "region"
    prod = len(
        yaml.safe_load((project / "stacks" / "Pulumi.alicloud-cn-hangzhou-prod.yaml").read_text())["config"]["gpufleet:fleet"][
            "autoscaling"
        ]["schedules"]
    )
    _edit(project, "alicloud-cn-hangzhou-dev", autoscaling=_schedules(cap.most - prod - 1, "dev"))
    _edit(project, "alicloud-cn-hangzhou-staging", autoscaling=_schedules(1, "stg"))
    assert account.check(project, "alicloud").problems == []  # exactly the quota
    _edit(project, "alicloud-cn-hangzhou-staging", autoscaling=_schedules(2, "stg"))
    problems = account.check(project, "alicloud").problems
    assert {p.file for p in problems} == {f"stacks/Pulumi.alicloud-cn-hangzhou-{e}.yaml" for e in ("dev", "staging", "prod")}
    assert all(
        p.path == "fleet.autoscaling.schedules" and f"{cap.most + 1} in the alicloud stacks of cn-hangzhou" in p.message
        for p in problems
    )
    assert all(cap.quota in p.message and f"at most {cap.most}" in p.message for p in problems)
    with pytest.raises(SystemExit) as exc:
        main(["check", "--cloud", "alicloud"])
    assert exc.value.code == 2 and "keep the region's total at most" in capsys.readouterr().err
    # Tencent's cap is per scaling group: the same numbers there are not added up
    assert registry.list_caps("tencentcloud")["autoscaling.schedules"].scope == "fleet"


def _copy(project, src: str, dst: str) -> Path:
    path = project / "stacks" / f"Pulumi.{dst}.yaml"
    shutil.copy(project / "stacks" / f"Pulumi.{src}.yaml", path)
    return path


def test_a_stack_copied_for_a_region_but_not_edited_is_refused_by_its_name(project, capsys):
    """The trace of a copy-paste second region: the file says cn-beijing, its fleet still says cn-hangzhou."""
    _copy(project, "alicloud-cn-hangzhou-dev", "alicloud-cn-beijing-dev")
    with pytest.raises(SystemExit) as exc:
        main(["preview", "--stack", "alicloud-cn-beijing-dev"])
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "stacks/Pulumi.alicloud-cn-beijing-dev.yaml" in err and "says region cn-beijing" in err
    assert "rename the file to Pulumi.alicloud-cn-hangzhou-dev.yaml" in err
    # a name outside the convention is the user's own choice: not checked
    _copy(project, "alicloud-cn-hangzhou-dev", "mine")
    assert loader.load_fleet("mine").spec.region == "cn-hangzhou"
    _copy(project, "alicloud-cn-hangzhou-dev", "alicloud-cn-hangzhou-dev-blue")  # a suffix after the environment
    assert loader.load_fleet("alicloud-cn-hangzhou-dev-blue").spec.environment == "dev"
    _copy(project, "alicloud-cn-hangzhou-dev", "alicloud-cn-hangzhou-prod")  # environment only
    with pytest.raises(UserError, match="says environment prod, its fleet is alicloud cn-hangzhou dev"):
        loader.load_fleet("alicloud-cn-hangzhou-prod")


def test_a_provider_region_that_disagrees_with_the_fleet_is_refused(project):
    path = project / "stacks" / "Pulumi.alicloud-cn-hangzhou-dev.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["alicloud:region"] = "cn-beijing"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(UserError) as exc:
        loader.load_fleet("alicloud-cn-hangzhou-dev")
    [p] = exc.value.problems
    assert p.path == "config.alicloud:region" and "'cn-beijing' but fleet.region is 'cn-hangzhou'" in p.message


@pytest.mark.parametrize(
    ("text", "field", "said"),
    [
        ("config:\n  gpufleet:fleet: [1, 2]\n", "config.gpufleet:fleet", "is a list: the fleet spec is a mapping"),
        ("config:\n  gpufleet:fleet: hangzhou\n", "config.gpufleet:fleet", "is text"),
        ("config: [1, 2]\n", "config", "is a list: it must be a mapping"),
        ("- config\n", "", "is a list: a Pulumi stack file is a mapping"),
    ],
)
def test_a_stack_file_of_the_wrong_shape_says_what_it_is(project, text, field, said):
    (project / "stacks" / "Pulumi.mine.yaml").write_text(text)
    with pytest.raises(UserError) as exc:
        loader.load_fleet("mine")
    [p] = exc.value.problems
    assert (p.file, p.path) == ("stacks/Pulumi.mine.yaml", field) and said in p.message


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda e, w: e.update(pins=[1]), "images.cuda13-vllm.pins"),
        (lambda e, w: e.update(pins={"vllm": 1}), "images.cuda13-vllm.pins.vllm"),
        (lambda e, w: w.update(image_id=""), "images.cuda13-vllm.regions.alicloud.cn-hangzhou.image_id"),
        (lambda e, w: w.update(placeholder="no"), "images.cuda13-vllm.regions.alicloud.cn-hangzhou.placeholder"),
        (lambda e, w: w.update(manifest_sha256="zz"), "images.cuda13-vllm.regions.alicloud.cn-hangzhou.manifest_sha256"),
        # a hand-edited id reached the launch configuration as written (lock.id_problem, as `image lock record` checks)
        (lambda e, w: w.update(image_id="m-abc\n"), "images.cuda13-vllm.regions.alicloud.cn-hangzhou.image_id"),
        (lambda e, w: w.update(image_id="img-abc"), "images.cuda13-vllm.regions.alicloud.cn-hangzhou.image_id"),
        (lambda e, w: w.update(placeholder=False), "images.cuda13-vllm.regions.alicloud.cn-hangzhou.image_id"),
    ],
)
def test_a_lock_file_entry_of_the_wrong_type_is_refused_not_a_traceback(project, capsys, edit, field):
    """images/lock.json as `image lock record` writes it: pins of version strings, a non-empty image id, placeholder
    true/false, manifest_sha256 null or a sha256 (a list of pins was a TypeError in the image checks)."""
    import json

    path = project / "images" / "lock.json"
    doc = json.loads(path.read_text())
    entry = doc["images"]["cuda13-vllm"]
    edit(entry, entry["regions"]["alicloud"]["cn-hangzhou"])
    path.write_text(json.dumps(doc))
    with pytest.raises(SystemExit) as exc:
        main(["preview", "--stack", "alicloud-cn-hangzhou-dev"])
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"images/lock.json: {field}" in err and "Traceback" not in err
