"""ssl.principal.mapping.rules: Kafka's SslPrincipalMapper syntax, and the principal of a certificate."""
import pytest

from tierlog.net.dev_certs import DevCa
from tierlog.net.security import SecurityConfigError
from tierlog.net.ssl_principal import ANONYMOUS, SslPrincipalMapper, subject_dn


def test_default_is_the_whole_dn():
    assert SslPrincipalMapper().name("CN=alice,OU=eng,O=org") == "CN=alice,OU=eng,O=org"


def test_rules_first_match_wins_with_groups_and_case():
    m = SslPrincipalMapper(r"RULE:^CN=([^,]+),OU=eng.*$/$1/L, RULE:^CN=(.*?),.*$/$1@x/U,DEFAULT")
    assert m.name("CN=Alice,OU=eng,O=org") == "alice"
    assert m.name("CN=bob,O=org") == "BOB@X"
    assert m.name("O=org") == "O=org"


def test_a_dn_no_rule_applies_to_is_refused():
    m = SslPrincipalMapper(r"RULE:^CN=(.*)$/$1/")
    assert m.name("CN=a") == "a"
    assert m.name("O=org") is None


@pytest.mark.parametrize("bad", ["RULE:^CN", "NOPE", "RULE:(/x/"])
def test_bad_rules_are_config_errors(bad):
    with pytest.raises(SecurityConfigError, match="ssl.principal.mapping.rules"):
        SslPrincipalMapper(bad)


def test_certificate_subject_and_principal(tmp_path):
    ca = DevCa.create(tmp_path)
    cert = ca.issue("alice", ["localhost"])
    der = _der(cert.keystore)
    assert subject_dn(der).startswith("CN=alice")
    assert SslPrincipalMapper(r"RULE:^CN=([^,]+).*$/$1/L").principal(der) == "User:alice"
    assert SslPrincipalMapper().principal(None) == ANONYMOUS


def _der(pem_path) -> bytes:
    import ssl
    text = pem_path.read_text()
    start = text.index("-----BEGIN CERTIFICATE-----")
    end = text.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
    return ssl.PEM_cert_to_DER_cert(text[start:end])
