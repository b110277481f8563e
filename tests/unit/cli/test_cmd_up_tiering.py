"""`tierlog up` turns tiered storage on and points it at the remote storage location."""
from pathlib import Path

import pytest

from tierlog.cli.cmd_up import NodePlan, node_properties, tiering_properties
from tierlog.cli.errors import CliError
from tierlog.config import NodeConfig, parse_properties


def test_default_remote_storage_is_under_the_data_dir(tmp_path):
    props = tiering_properties(None, tmp_path)
    assert props == {"remote.log.storage.system.enable": "true", "follower.fetch.last.tiered.offset.enable": "true",
                     "rsm.config.storage.backend": "fs",
                     "rsm.config.storage.root": str(tmp_path / "remote-storage")}


def test_a_directory_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tiering_properties("rs", Path("/data"))["rsm.config.storage.root"] == str(tmp_path / "rs")


def test_an_s3_location():
    props = tiering_properties("s3://bucket/some/prefix/", Path("/data"))
    assert props["rsm.config.storage.backend"] == "s3"
    assert props["rsm.config.storage.s3.bucket.name"] == "bucket"
    assert props["rsm.config.storage.s3.prefix"] == "some/prefix/"


def test_an_s3_location_without_bucket_is_a_cli_error():
    with pytest.raises(CliError, match="--remote-storage"):
        tiering_properties("s3://", Path("/data"))


def test_every_node_gets_the_settings_and_they_parse(tmp_path):
    plan = NodePlan(4, ("broker",), 9092, None)
    text = node_properties(plan, "127.0.0.1", "1@127.0.0.1:9192", "c", tmp_path / "d",
                           tiering_properties(None, tmp_path))
    config = NodeConfig(parse_properties(text))
    assert config["remote.log.storage.system.enable"] is True
    assert config["follower.fetch.last.tiered.offset.enable"] is True          # KIP-1023 on
    assert config.prefixed("rsm.config.") == {"rsm.config.storage.backend": "fs",
                                             "rsm.config.storage.root": str(tmp_path / "remote-storage")}
    assert config.unknown == []
    assert config.metrics_listener == ("127.0.0.1", 0)                        # served on a free port
