"""Why a command could not use the cluster, as one line that names the cause and the fix.

Both ways the CLI connects (librdkafka's clients through `cli.health`, tierlog's own
connection through `cli.broker_wire`) end here when no bootstrap server could be used:

- the login was refused (SASL mechanism or credentials): the server's reason, and where the
  credentials come from (``sasl.jaas.config`` of --command-config);
- the command spoke plaintext and the server closed the connection: a TLS handshake is tried
  (`net.connect.speaks_tls`); a TLS listener is named as such, with the --command-config that
  ``tierlog up --security`` writes (its data dir's ``client.properties``);
- anything else: ``cannot reach bootstrap server HOST:PORT (reason)``.
"""

from __future__ import annotations

from pathlib import Path

from tierlog.net.connect import speaks_tls

__all__ = ["TLS_PROBE_TIMEOUT_S", "login_refused", "unreachable"]

TLS_PROBE_TIMEOUT_S = 2.0       # the handshake tried to tell a TLS listener from a plaintext one
_DEFAULT_CLIENT_PROPERTIES = Path("tierlog-data/client.properties")     # tierlog up's default --data-dir


def login_refused(bootstrap: str, reason: str) -> str:
    detail = reason.removeprefix("SASL authentication error: ").removeprefix("SASL authentication failed: ")
    return (f"{bootstrap} refused the login: {detail}: check the username and password of sasl.jaas.config "
            "in --command-config")


def unreachable(bootstrap: str, reason: str, *, spoke_tls: bool) -> str:
    """The message for a bootstrap server that could not be used (``reason``: the last failure, or '')."""
    if not spoke_tls:
        for address in _addresses(bootstrap):
            if speaks_tls(*address, TLS_PROBE_TIMEOUT_S):
                return (f"{address[0]}:{address[1]} closed the connection during the handshake: it is a TLS "
                        f"listener and this command spoke plaintext: pass --command-config {_client_properties()}")
    return f"cannot reach bootstrap server {bootstrap}" + (f" ({reason})" if reason else "")


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
