"""A development certificate authority and the certificates it signs, made with
``cryptography`` (for tests and, later, ``tierlog up --security``): never for production.

``DevCa.create(directory)`` writes ``ca.crt`` / ``ca.key``; ``issue(name, hosts)``
writes ``<name>.crt``, ``<name>.key`` and ``<name>.pem`` (key + chain, the form of
Kafka's PEM ``ssl.keystore.location``) and, with a password, ``<name>.p12`` (PKCS12).
Certificates carry what strict verifiers want (Python 3.13's, OpenSSL 3): the CA
basicConstraints CA:TRUE (critical) and keyCertSign/cRLSign; leaves a SAN of every
host given (DNS names and IP addresses), serverAuth + clientAuth extended key usage,
and subject / authority key identifiers. Keys are EC P-256 (fast to make and to use).
Private keys are written readable by the owner only.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["DevCa", "IssuedCert"]

VALIDITY_DAYS = 825          # the longest leaf validity Apple's and browsers' rules accept
_CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class IssuedCert:
    cert: Path          # the certificate (PEM)
    key: Path           # its private key (PEM, PKCS8, unencrypted)
    keystore: Path      # key + certificate + CA certificate in one PEM file
    pkcs12: Path | None = None


class DevCa:
    """A CA whose key and certificate live in ``directory``."""

    def __init__(self, directory: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate):
        self.directory = directory
        self._key = key
        self._cert = cert

    @property
    def cert_path(self) -> Path:
        return self.directory / "ca.crt"

    @classmethod
    def create(cls, directory: str | os.PathLike, name: str = "tierlog development CA") -> DevCa:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - _CLOCK_SKEW).not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                             key_encipherment=False, data_encipherment=False, key_agreement=False,
                                             key_cert_sign=True, crl_sign=True, encipher_only=False,
                                             decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        _write(directory / "ca.key", _key_pem(key), private=True)
        _write(directory / "ca.crt", cert.public_bytes(serialization.Encoding.PEM))
        return cls(directory, key, cert)

    def issue(self, name: str, hosts: list[str], *, pkcs12_password: str | None = None,
              days: int = VALIDITY_DAYS, not_before: datetime.datetime | None = None) -> IssuedCert:
        """A leaf certificate ``CN=<name>`` valid for ``hosts`` (DNS names or IPs), as server and client."""
        key = ec.generate_private_key(ec.SECP256R1())
        start = not_before or datetime.datetime.now(datetime.UTC) - _CLOCK_SKEW
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(self._cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                               critical=False)
                .sign(self._key, hashes.SHA256()))
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        ca_pem = self._cert.public_bytes(serialization.Encoding.PEM)
        out = IssuedCert(self.directory / f"{name}.crt", self.directory / f"{name}.key",
                         self.directory / f"{name}.pem",
                         self.directory / f"{name}.p12" if pkcs12_password else None)
        _write(out.cert, cert_pem)
        _write(out.key, _key_pem(key), private=True)
        _write(out.keystore, _key_pem(key) + cert_pem + ca_pem, private=True)
        if out.pkcs12 is not None and pkcs12_password:
            _write(out.pkcs12, pkcs12.serialize_key_and_certificates(
                name.encode(), key, cert, [self._cert],
                serialization.BestAvailableEncryption(pkcs12_password.encode())), private=True)
        return out


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
