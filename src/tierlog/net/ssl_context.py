"""``ssl.SSLContext``s from ``SslSettings``: a listener's (server side) and a connection's
(client side). The SSL context factory of every listener and outbound connection.

- Keystore PEM: a file holding the private key (``ssl.key.password`` when encrypted)
  and the certificate chain, or inline ``ssl.keystore.certificate.chain`` +
  ``ssl.keystore.key``; PKCS12: a file opened with ``ssl.keystore.password`` (the key
  with ``ssl.key.password`` when set, else the store's password), read with
  ``cryptography``. Python's ``ssl`` loads a chain only from a file, so inline and
  PKCS12 material goes through a private temporary file that is deleted at once.
- Truststore: PEM file or inline ``ssl.truststore.certificates``, or PKCS12; none means
  the system's CAs (clients) and no client verification (listeners).
- ``ssl.client.auth``: none / requested / required -> CERT_NONE / CERT_OPTIONAL /
  CERT_REQUIRED. ``ssl.enabled.protocols`` bounds the TLS versions;
  ``ssl.endpoint.identification.algorithm=https`` checks the server's host name
  (clients only; empty turns it off, as in Kafka).

A store that cannot be read (missing file, wrong password, not a key) raises
``SecurityConfigError`` naming the key, in one line.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from tierlog.net.security import SecurityConfigError, SslSettings

__all__ = ["client_context", "server_context"]

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(settings: SslSettings) -> ssl.SSLContext:
    """A listener's context: its certificate, and client verification per ``ssl.client.auth``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _bound_versions(context, settings)
    _load_keystore(context, settings)
    if settings.client_auth != "none":
        _load_truststore(context, settings)
    context.verify_mode = _VERIFY[settings.client_auth]
    return context


def client_context(settings: SslSettings) -> ssl.SSLContext:
    """An outbound connection's context: the server verified against the truststore (the
    system's CAs when none), our certificate offered when there is a keystore (mutual TLS)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _bound_versions(context, settings)
    if settings.has_keystore:
        _load_keystore(context, settings)
    context.check_hostname = settings.verify_certificates and settings.endpoint_identification_algorithm == "https"
    if not settings.verify_certificates:
        context.verify_mode = ssl.CERT_NONE
    elif settings.truststore_location or settings.truststore_certificates:
        _load_truststore(context, settings)
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return context


def _bound_versions(context: ssl.SSLContext, settings: SslSettings) -> None:
    versions = sorted(_VERSIONS[v] for v in settings.enabled_protocols)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


def _load_keystore(context: ssl.SSLContext, settings: SslSettings) -> None:
    if settings.keystore_type == "PKCS12":
        _load_chain_text(context, _pkcs12_keystore_pem(settings), "ssl.keystore.location")
    elif settings.keystore_certificate_chain:
        key = _pem_key(settings.keystore_key, settings.key_password, "ssl.keystore.key")
        _load_chain_text(context, key + settings.keystore_certificate_chain.encode(), "ssl.keystore.key")
    else:
        password = settings.key_password or settings.keystore_password
        if settings.keystore_location is None:
            raise SecurityConfigError("ssl.keystore.location: required (or ssl.keystore.certificate.chain "
                                      "and ssl.keystore.key)")
        try:
            context.load_cert_chain(settings.keystore_location, settings.keystore_key_location,
                                    password=password or None)
        except (OSError, ssl.SSLError) as e:
            raise SecurityConfigError(f"ssl.keystore.location {settings.keystore_location}: cannot load the "
                                      f"key and certificate chain ({_reason(e)})") from None


def _load_truststore(context: ssl.SSLContext, settings: SslSettings) -> None:
    try:
        if settings.truststore_type == "PKCS12":
            context.load_verify_locations(cadata=_pkcs12_truststore_pem(settings).decode())
        elif settings.truststore_certificates:
            context.load_verify_locations(cadata=settings.truststore_certificates)
        else:
            context.load_verify_locations(cafile=settings.truststore_location)
    except (OSError, ssl.SSLError) as e:
        where = settings.truststore_location or "ssl.truststore.certificates"
        raise SecurityConfigError(f"ssl.truststore {where}: cannot load the certificates ({_reason(e)})") from None


def _load_chain_text(context: ssl.SSLContext, pem: bytes, key: str) -> None:
    """``load_cert_chain`` of PEM text, through a temporary file readable by us only."""
    fd, path = tempfile.mkstemp(prefix="tierlog-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        context.load_cert_chain(path)
    except ssl.SSLError as e:
        raise SecurityConfigError(f"{key}: cannot load the key and certificate chain ({_reason(e)})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _pem_key(text: str | None, password: str | None, key: str) -> bytes:
    """The inline private key as unencrypted PKCS8 PEM (it may be encrypted with ``ssl.key.password``)."""
    try:
        private = serialization.load_pem_private_key((text or "").encode(), password.encode() if password else None)
    except (ValueError, TypeError) as e:
        raise SecurityConfigError(f"{key}: cannot read the private key ({e})") from None
    return private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())


def _read_pkcs12(location: str | None, password: str | None, key: str):
    try:
        if location is None:
            raise TypeError("no location")
        with open(location, "rb") as f:
            data = f.read()
    except (OSError, TypeError) as e:
        raise SecurityConfigError(f"{key} {location}: cannot read ({_reason(e)})") from None
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as e:
        raise SecurityConfigError(f"{key} {location}: not a PKCS12 store or a wrong password ({e})") from None


def _pkcs12_keystore_pem(settings: SslSettings) -> bytes:
    key, cert, chain = _read_pkcs12(settings.keystore_location, settings.keystore_password, "ssl.keystore.location")
    if key is None or cert is None:
        raise SecurityConfigError(f"ssl.keystore.location {settings.keystore_location}: the PKCS12 store has "
                                  "no private key and certificate")
    out = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    return out + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *chain])


def _pkcs12_truststore_pem(settings: SslSettings) -> bytes:
    _, cert, chain = _read_pkcs12(settings.truststore_location, settings.truststore_password,
                                  "ssl.truststore.location")
    certs = [c for c in [cert, *chain] if c is not None]
    if not certs:
        raise SecurityConfigError(f"ssl.truststore.location {settings.truststore_location}: no certificates")
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
