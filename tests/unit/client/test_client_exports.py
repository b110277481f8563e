"""tierlog.client's names, the ones imported on first use included, resolve to something."""
from tierlog import client


def test_every_exported_name_resolves():
    for name in client.__all__:
        assert getattr(client, name) is not None, name
