"""``LogDirFailures``: partitions whose log dir failed stay offline until unassigned."""
from types import SimpleNamespace

from tierlog.broker.log_dir_failure import LogDirFailures


class Logs:
    def __init__(self):
        self.checked = 0

    def take_failed_offline(self):
        self.checked += 1


def test_the_partitions_whose_log_went_offline_are_named_and_stay_offline():
    logs = Logs()
    failures = LogDirFailures(logs)
    failures.check()
    assert logs.checked == 1
    parts = {("t", 1): SimpleNamespace(offline=True), ("t", 0): SimpleNamespace(offline=False),
             ("u", 0): SimpleNamespace(offline=True)}
    assert failures.take_offline(parts) == [("t", 1), ("u", 0)]
    assert failures.is_offline(("t", 1)) and not failures.is_offline(("t", 0)) and len(failures) == 2
    assert failures.take_offline({}) == []         # nothing new: the earlier ones stay offline
    assert failures.is_offline(("u", 0))


def test_an_unassigned_partition_may_be_hosted_again():
    failures = LogDirFailures(Logs())
    failures.take_offline({("t", 0): SimpleNamespace(offline=True)})
    failures.forget(("t", 0))
    assert not failures.is_offline(("t", 0)) and len(failures) == 0
