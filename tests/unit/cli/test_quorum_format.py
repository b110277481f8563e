"""`tierlog format` for a dynamic controller quorum (KIP-853, cli/quorum_format.py): meta.properties
with a directory id, the bootstrap checkpoint with the first voters, and one-line refusals."""
import pytest

from tierlog.cli.errors import CliError
from tierlog.cli.quorum_format import QuorumFormat, format_quorum, parse_initial_controllers
from tierlog.config import ConfigError, NodeConfig
from tierlog.raft.file_snapshots import FileSnapshotStore
from tierlog.raft.snapshots import SnapshotReader
from tierlog.raft.types import OffsetAndEpoch
from tierlog.raft.voters import Endpoint
from tierlog.storage.meta_properties import kafka_uuid_bytes, read_directory_id

DIR_2 = "2nIwt3bNQhq9CgBR9nMtrA"


def _config(tmp_path, node_id=1, **extra) -> NodeConfig:
    return NodeConfig({"node.id": str(node_id), "process.roles": "controller", "cluster.id": "c1",
                       "listeners": "CONTROLLER://127.0.0.1:9193", "log.dirs": str(tmp_path / f"n{node_id}"),
                       "controller.quorum.bootstrap.servers": "127.0.0.1:9193", **extra})


def _bootstrap_voters(config: NodeConfig):
    store = FileSnapshotStore(config.log_dirs[0] / "__cluster_metadata-0")
    sid = OffsetAndEpoch(0, 0)
    assert store.list() == [sid]
    reader = SnapshotReader(sid, store.read_all(sid))
    assert reader.kraft_version == 1
    return reader.voters


def test_standalone_writes_this_controller_as_the_first_voter(tmp_path):
    config = _config(tmp_path)
    cluster_id, dir_id, voters = format_quorum(config, QuorumFormat(standalone=True))
    assert cluster_id == "c1" and read_directory_id(config.log_dirs[0]) == dir_id
    v = _bootstrap_voters(config).get(1)
    assert v.directory_id == dir_id and v.endpoints == (Endpoint("CONTROLLER", "127.0.0.1", 9193),)
    with pytest.raises(CliError, match="already holds metadata"):
        format_quorum(config, QuorumFormat(standalone=True))


def test_initial_controllers_fix_this_nodes_directory_id(tmp_path):
    config = _config(tmp_path, node_id=2)
    _, dir_id, voters = format_quorum(config, QuorumFormat(
        initial_controllers=f"1@h1:9193:{'A' * 21}Q,2@h2:9194:{DIR_2}"))
    assert dir_id == kafka_uuid_bytes(DIR_2) and sorted(voters.ids) == [1, 2]
    assert _bootstrap_voters(config) == voters


def test_no_initial_controllers_writes_only_meta_properties(tmp_path):
    config = _config(tmp_path)
    _, dir_id, voters = format_quorum(config, QuorumFormat(no_initial_controllers=True))
    assert voters is None and read_directory_id(config.log_dirs[0]) == dir_id
    assert not (config.log_dirs[0] / "__cluster_metadata-0").exists()


@pytest.mark.parametrize("text", ["1@h:9193", "x@h:1:AAAAAAAAAAAAAAAAAAAAAA", "1@h:1:notauuid", "",
                                  f"1@h:1:{DIR_2},1@h:2:{DIR_2}"])
def test_bad_initial_controllers_are_one_line_errors(text):
    with pytest.raises(CliError, match="--initial-controllers"):
        parse_initial_controllers(text, "CONTROLLER")


def test_voters_and_bootstrap_servers_together_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="set one"):
        _config(tmp_path, **{"controller.quorum.voters": "1@127.0.0.1:9193"})


def test_a_broker_of_a_dynamic_quorum_needs_no_voters(tmp_path):
    config = NodeConfig({"node.id": "4", "process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.1:9092",
                         "controller.quorum.bootstrap.servers": "127.0.0.1:9193,127.0.0.1:9194"})
    assert config.dynamic_quorum and config.bootstrap_servers == [("127.0.0.1", 9193), ("127.0.0.1", 9194)]
