"""Each registered cloud's facts module (components/<cloud>/facts.py) reads its resource types into the same facts,
so that the invariants of test_policy.py are written once."""

from gpufleet import registry


def tag_map(tags) -> dict:
    """A resource's tags input as one map: a map ({key: value}) or a list of {key, value} (Tencent's TAT command)."""
    return {t["key"]: t["value"] for t in tags} if isinstance(tags, list) else dict(tags or {})


def of(inv, token):
    return [r["inputs"] for r in inv.resources if r["type"] == token]


class _Views(dict):
    """cloud -> view(inventory), looked up in the registry (a cloud registered by a test is included)."""

    def __missing__(self, cloud):
        return registry.module(cloud, "facts").view

    def __iter__(self):
        return iter(registry.names())

    def __len__(self):
        return len(registry.names())

    def keys(self):
        return set(registry.names())


VIEWS = _Views()


def tencentcloud_view(inv) -> dict:
    return VIEWS["tencentcloud"](inv)
