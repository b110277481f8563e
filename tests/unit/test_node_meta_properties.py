"""meta.properties at start: a log dir's file without cluster.id stops the start with one line
(it used to give the node the cluster id None, written back as ``cluster.id=None``)."""
import pytest

from tierlog.config import ConfigError, NodeConfig
from tierlog.storage.meta_properties import ensure_meta_properties


def _config(tmp_path) -> NodeConfig:
    return NodeConfig({"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)})


def test_a_meta_properties_without_cluster_id_is_a_config_error(tmp_path):
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=1\n")
    with pytest.raises(ConfigError, match="no cluster.id"):
        _ensure(_config(tmp_path))


def test_a_meta_properties_with_cluster_id_keeps_it(tmp_path):
    (tmp_path / "meta.properties").write_text("version=1\ncluster.id=abc\nnode.id=1\n")
    cluster_id, dir_ids = _ensure(_config(tmp_path))
    assert cluster_id == "abc" and list(dir_ids) == [tmp_path]


def _ensure(cfg: NodeConfig):
    return ensure_meta_properties(cfg.log_dirs, cfg.node_id, cfg["cluster.id"])
