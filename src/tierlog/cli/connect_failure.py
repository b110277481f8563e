"""Why a command could not use the cluster, as one line that names the cause and the fix.

Both ways the CLI connects (librdkafka's clients through `cli.health`, tierlog's own
connection through `cli.broker_wire`) end here when no bootstrap server could be used:

- the login was refused (SASL mechanism or credentials): the server's reason, and where the
  credentials come from (``sasl.jaas.config`` of --command-config);
- the command spoke plaintext: a plaintext SaslHandshake is sent (allowed before a login). A
  SASL listener answers with its mechanisms (one without SASL answers ILLEGAL_SASL_STATE) and,
  if the command did not log in, is named as such with the --command-config that ``tierlog up
  --security`` writes (its data dir's ``client.properties``). No answer at all: a TLS handshake
  is tried (`net.connect.speaks_tls`), and a TLS listener is named as such, with the same fix.
  (The TLS probe only follows a plaintext one that got no answer: a plaintext listener would
  log its ClientHello as an oversized frame.)
- anything else: ``cannot reach bootstrap server HOST:PORT (reason)``.
"""

from __future__ import annotations

from pathlib import Path

from tierlog.net.blocking import BlockingConnection
from tierlog.net.connect import speaks_tls
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.protocol import ApiKey
from tierlog.protocol.errors import ErrorCode

__all__ = ["PROBE_TIMEOUT_S", "login_refused", "not_logged_in", "unreachable"]

PROBE_TIMEOUT_S = 2.0           # each probe (a TLS handshake, a SaslHandshake) that tells a listener's kind
_SASL_ANSWERS = (ErrorCode.NONE, ErrorCode.UNSUPPORTED_SASL_MECHANISM)   # a SASL listener's, before login
_DEFAULT_CLIENT_PROPERTIES = Path("tierlog-data/client.properties")     # tierlog up's default --data-dir


def login_refused(bootstrap: str, reason: str) -> str:
    detail = reason.removeprefix("SASL authentication error: ").removeprefix("SASL authentication failed: ")
    return (f"{bootstrap} refused the login: {detail}: check the username and password of sasl.jaas.config "
            "in --command-config")


def unreachable(bootstrap: str, reason: str, *, spoke_tls: bool, spoke_sasl: bool) -> str:
    """The message for a bootstrap server that could not be used (``reason``: the last failure, or '')."""
    for host, port in [] if spoke_tls else _addresses(bootstrap):
        answered, mechanisms = _sasl_probe(host, port)
        if mechanisms is not None and not spoke_sasl:
            return _sasl_listener(host, port, mechanisms)
        if not answered and speaks_tls(host, port, PROBE_TIMEOUT_S):
            return (f"{host}:{port} closed the connection during the handshake: it is a TLS listener and "
                    f"this command spoke plaintext: pass --command-config {_client_properties()}")
    return f"cannot reach bootstrap server {bootstrap}" + (f" ({reason})" if reason else "")


def not_logged_in(host: str, port: int) -> str | None:
    """The message for a SASL listener that a command without a login spoke to, None if it is not one."""
    mechanisms = _sasl_probe(host, port)[1]
    return None if mechanisms is None else _sasl_listener(host, port, mechanisms)


def _sasl_listener(host: str, port: int, mechanisms: list[str]) -> str:
    return (f"{host}:{port} closed the connection: it is a SASL listener ({', '.join(mechanisms)}) and this "
            f"command did not log in: pass --command-config {_client_properties()}")


def _sasl_probe(host: str, port: int) -> tuple[bool, list[str] | None]:
    """(whether a plaintext SaslHandshake was answered, the mechanisms offered: None without SASL)."""
    try:
        conn = BlockingConnection(host, port, client_id="tierlog-cli", timeout_s=PROBE_TIMEOUT_S)
    except PeerUnavailable:
        return False, None
    try:
        answer = conn.request(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"}, PROBE_TIMEOUT_S)
    except PeerUnavailable:
        return False, None
    finally:
        conn.close()
    return True, list(answer["Mechanisms"]) if answer["ErrorCode"] in _SASL_ANSWERS else None


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    found = []
    for text in bootstrap.split(","):
        host, _, port = text.strip().rpartition(":")
        if host and port.isdigit():
            found.append((host.strip("[]"), int(port)))
    return found


def _client_properties() -> str:
    """The client.properties to name: ./tierlog-data's when there is one, else where tierlog up writes it."""
    if _DEFAULT_CLIENT_PROPERTIES.is_file():
        return str(_DEFAULT_CLIENT_PROPERTIES)
    return "DATA_DIR/client.properties (tierlog up --security writes it in its --data-dir)"
