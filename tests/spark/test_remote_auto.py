"""remoteStorage=auto's decisions on DescribeConfigs answers (sans-IO, no Spark, no broker)."""
from tierlog.protocol.errors import ErrorCode
from tierlog.spark.remote_auto import store_settings, tiered_topics

ROOT = "rsm.config.storage.root"


def _result(configs: dict, error=ErrorCode.NONE, name="1") -> dict:
    return {"ErrorCode": error, "ResourceName": name, "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}


def test_only_topics_with_remote_storage_enabled_are_tiered():
    results = [_result({"remote.storage.enable": "true"}, name="a"), _result({"remote.storage.enable": "false"}, name="b"),
               _result({}, ErrorCode.TOPIC_AUTHORIZATION_FAILED, name="c")]
    assert tiered_topics(results) == ["a"]


def test_the_brokers_storage_settings_with_the_sources_options_winning():
    broker = _result({"rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": "b",
                      "rsm.config.storage.s3.endpoint.url": "http://inside:9000", "rlmm.config.x": None,
                      "log.dirs": "/data"})
    settings, _ = store_settings(broker, {"rsm.config.storage.s3.endpoint.url": "http://outside:9000"})
    assert settings == {"rsm.config.storage.backend": "s3", "rsm.config.storage.s3.bucket.name": "b",
                        "rsm.config.storage.s3.endpoint.url": "http://outside:9000"}


def test_brokers_when_the_configs_cannot_be_read_or_say_nothing():
    refused, why = store_settings(_result({}, ErrorCode.CLUSTER_AUTHORIZATION_FAILED), {})
    assert refused is None and "cannot be read" in why
    hidden, why = store_settings(_result({ROOT: None}), {})       # shown as sensitive: no value
    assert hidden is None and "no rsm.config.storage" in why


def test_encrypted_uploads_need_a_key_option():
    broker = _result({ROOT: "/r", "rsm.config.encryption.enabled": "true"})
    none, why = store_settings(broker, {})
    assert none is None and "encrypted" in why
    keyed, _ = store_settings(broker, {"rsm.config.encryption.keys.k1.file": "/k1"})
    assert keyed[ROOT] == "/r" and keyed["rsm.config.encryption.keys.k1.file"] == "/k1"
