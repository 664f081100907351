"""X.509 certificates made for tests: a CA, or a leaf or intermediate signed by one, on an EC key."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Signed = tuple[x509.Certificate, Any]  # the certificate and its private key


def make_cert(cn: str, issuer: Signed | None = None, *, ca: bool | None = None, orgs: tuple[str, ...] = (),
              at: datetime.datetime | None = None, days: float = 1.0, path_length: int | None = None,
              usages: tuple[x509.ObjectIdentifier, ...] | None = None, ips: tuple[str, ...] = ()) -> Signed:
    """Self-signed when ``issuer`` is None; a CA when ``ca`` (default: self-signed ones), with
    ``path_length``; a leaf with extended key ``usages`` when given; naming the IP addresses ``ips``
    (a subjectAltName). Valid one day before ``at`` (default: the real time, which a TLS handshake
    checks) to ``days`` after it."""
    now = at or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn),
                      *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs)])
    issuer_name, signer = (issuer[0].subject, issuer[1]) if issuer else (name, key)
    is_ca = issuer is None if ca is None else ca
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=path_length if is_ca else None),
                              critical=True))
    if ips:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]), critical=False)
    if usages is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    return builder.sign(signer, hashes.SHA256()), key


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def key_pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def served_certificate(port: int, ca: bytes) -> x509.Certificate:
    """The certificate a loopback TLS server on ``port`` presents, verified against ``ca`` (PEM)."""
    context = ssl.create_default_context(cadata=ca.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True))
