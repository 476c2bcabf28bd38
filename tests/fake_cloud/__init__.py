"""A fake third cloud, registered only by tests/test_fake_cloud.py: proof that a cloud is one package plus one
registry line. Its numbers are made up (quality `estimate`, source "fake"); it is never shipped."""
