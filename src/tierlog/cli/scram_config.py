"""Kafka's textual form of SCRAM credentials, as kafka-configs.sh and kafka-storage.sh take them::

    SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]
    SCRAM-SHA-512=[name=admin,password=admin-secret]                       (format --add-scram)

``parse_scram_config`` gives (mechanism, {key: value}) per entry; a value may be quoted
("..."), so it may hold commas and brackets. Errors are ``CliError`` one-liners that never
echo a password.
"""
from __future__ import annotations

from tierlog.metadata.scram import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
)

from .errors import CliError

__all__ = ["ScramEntry", "parse_scram_config", "parse_scram_mechanisms"]

_KEYS = ("name", "password", "iterations")


class ScramEntry:
    """One mechanism's credential to set: the user (``name``, format only), password, iterations."""

    __slots__ = ("iterations", "mechanism", "name", "password")

    def __init__(self, mechanism: ScramMechanism, name: str | None, password: str, iterations: int):
        self.mechanism, self.name, self.password, self.iterations = mechanism, name, password, iterations

    def __repr__(self) -> str:
        return f"ScramEntry({self.mechanism.mechanism_name}, name={self.name!r}, iterations={self.iterations})"


def _mechanism(text: str, option: str) -> ScramMechanism:
    mechanism = ScramMechanism.by_name(text)
    if mechanism is None:
        names = ", ".join(m.mechanism_name for m in ScramMechanism)
        raise CliError(f"{option}: unknown SCRAM mechanism {text.strip()!r} (want {names})")
    return mechanism


def _split(text: str, sep: str, option: str) -> list[str]:
    """``text`` split at ``sep`` outside quotes and brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth, quoted = 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "[":
            depth += 1
        elif not quoted and ch == "]":
            depth -= 1
        if ch == sep and depth == 0 and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quoted or depth:
        raise CliError(f"{option}: unbalanced quotes or brackets")
    parts.append("".join(current))
    return parts


def _options(body: str, option: str) -> dict[str, str]:
    out = {}
    for item in _split(body, ",", option):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in _KEYS:
            raise CliError(f"{option}: want {'|'.join(_KEYS)}=VALUE inside [...], got {key or item.strip()!r}")
        value = value.strip()
        out[key] = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    return out


def _iterations(text: str | None, option: str) -> int:
    if text is None:
        return DEFAULT_ITERATIONS
    if not text.isdigit() or not MIN_ITERATIONS <= int(text) <= MAX_ITERATIONS:
        raise CliError(f"{option}: iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}, got {text!r}")
    return int(text)


def parse_scram_config(text: str, option: str, need_name: bool) -> list[ScramEntry]:
    """Every ``MECHANISM=[key=value,...]`` entry of ``text``."""
    entries = []
    for entry in _split(text, ",", option):
        mech_text, eq, body = entry.partition("=")
        body = body.strip()
        if not eq or not (body.startswith("[") and body.endswith("]")):
            raise CliError(f"{option}: want MECHANISM=[{'name=USER,' if need_name else ''}password=...], "
                           f"got {mech_text.strip()!r}...")
        options = _options(body[1:-1], option)
        if not options.get("password"):
            raise CliError(f"{option}: {mech_text.strip()} needs password=...")
        if need_name and not options.get("name"):
            raise CliError(f"{option}: {mech_text.strip()} needs name=USER")
        if not need_name and "name" in options:
            raise CliError(f"{option}: the user is --entity-name, not name=")
        entries.append(ScramEntry(_mechanism(mech_text, option), options.get("name"), options["password"],
                                  _iterations(options.get("iterations"), option)))
    return entries


def parse_scram_mechanisms(text: str, option: str) -> list[ScramMechanism]:
    """``--delete-config SCRAM-SHA-256,SCRAM-SHA-512``."""
    return [_mechanism(name, option) for name in text.split(",") if name.strip()]
