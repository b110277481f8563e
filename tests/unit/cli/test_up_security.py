"""`tierlog up --security`'s layout (cli/up_security.py): certificates, the admin password and
client.properties are made once and kept; the settings every node gets; refusals."""
import pytest

from tierlog.cli.errors import CliError
from tierlog.cli.up_security import prepare_security
from tierlog.config import parse_properties
from tierlog.net.client_security import client_security
from tierlog.net.node_security import node_security


def test_plaintext_is_unchanged(tmp_path):
    security = prepare_security("plaintext", tmp_path, "127.0.0.1", existing_cluster=False)
    assert security.node_props == {} and security.client_properties is None and not any(tmp_path.iterdir())


def test_sasl_ssl_layout_is_honoured_by_nodes_and_clients_and_kept(tmp_path):
    first = prepare_security("sasl_ssl", tmp_path, "127.0.0.1", existing_cluster=False)
    assert (tmp_path / "tls" / "ca.crt").exists() and (tmp_path / "tls" / "node.pem").exists()
    assert first.client_properties.stat().st_mode & 0o077 == 0
    client = parse_properties(first.client_properties.read_text())
    spec = client_security(client)
    assert (spec.protocol.name, spec.sasl.mechanism, spec.sasl.username) == ("SASL_SSL", "SCRAM-SHA-512", "admin")
    assert {e.mechanism.mechanism_name for e in first.scram} == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert spec.sasl.password == first.scram[0].password and len(spec.sasl.password) >= 24
    assert first.node_props["super.users"] == "User:admin"
    assert first.node_props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert first.librdkafka_properties == tmp_path / "client-librdkafka.properties"
    assert first.librdkafka_properties.stat().st_mode & 0o077 == 0
    librdkafka = parse_properties(first.librdkafka_properties.read_text())
    assert librdkafka == {"security.protocol": "SASL_SSL", "ssl.ca.location": str(tmp_path / "tls" / "ca.crt"),
                          "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "admin",
                          "sasl.password": spec.sasl.password}
    assert client_security(librdkafka) == spec                 # the same settings in librdkafka's names
    for roles, listeners in ((("broker",), ["SASL_SSL"]), (("controller",), ["CONTROLLER"]),
                             (("broker", "controller"), ["SASL_SSL", "CONTROLLER"])):
        node = node_security(first.node_props, listeners, ["CONTROLLER"], "SASL_SSL" if "broker" in roles else None)
        assert node.controller.sasl.mechanism == "PLAIN"
        if "broker" in roles:
            assert node.inter_broker.sasl.mechanism == "SCRAM-SHA-512"
    ca = (tmp_path / "tls" / "ca.crt").read_bytes()
    again = prepare_security("sasl_ssl", tmp_path, "127.0.0.1", existing_cluster=True)
    assert again.scram[0].password == first.scram[0].password and (tmp_path / "tls" / "ca.crt").read_bytes() == ca


def test_an_existing_cluster_cannot_gain_the_admin_user(tmp_path):
    with pytest.raises(CliError, match="was started without SASL"):
        prepare_security("sasl_plaintext", tmp_path, "127.0.0.1", existing_cluster=True)
    ssl_only = prepare_security("ssl", tmp_path, "127.0.0.1", existing_cluster=True)
    assert "sasl.jaas.config" not in ssl_only.client_properties.read_text()
    assert "authorizer.class.name" not in ssl_only.node_props        # every TLS client is User:ANONYMOUS
    assert parse_properties(ssl_only.librdkafka_properties.read_text()) == {
        "security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "tls" / "ca.crt")}
