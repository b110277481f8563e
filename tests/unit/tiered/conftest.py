"""A real S3 endpoint for the tiered storage tests: a moto server on 127.0.0.1."""

from __future__ import annotations

import uuid

import pytest

from tierlog.tiered import S3ObjectStore, S3Settings

REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_endpoint():
    """The URL of a moto S3 server in this process's threads (an HTTP endpoint on 127.0.0.1)."""
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_env(monkeypatch):
    """Dummy credentials through boto3's usual chain (the environment)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "tierlog-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "tierlog-test-secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def s3_settings(moto_endpoint, s3_env):
    """Settings for a fresh bucket on the moto server."""
    import boto3

    bucket = f"tierlog-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name=REGION)
    client.create_bucket(Bucket=bucket)
    return S3Settings(bucket=bucket, prefix="cluster-a/", endpoint_url=moto_endpoint,
                      region=REGION, path_style=True)


@pytest.fixture
def s3_store(s3_settings):
    return S3ObjectStore(s3_settings)
