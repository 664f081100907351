"""Certificates and keys for a test control plane, made with `cryptography` on each start.

One cluster CA signs the API server's serving certificate and every client certificate (the admin in
`system:masters`, the controller manager and the scheduler under their own RBAC identities); a
separate front-proxy CA serves API aggregation; the service-account key pair signs tokens. EC P-256
keys keep generation under a tenth of a second.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
SERVICE_IP = "10.0.0.1"  # first address of the apiserver's --service-cluster-ip-range


@dataclass(frozen=True, slots=True)
class Pair:
    """A certificate and its key on disk."""

    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class ClusterPKI:
    """Every file the control plane's processes are pointed at."""

    ca: Pair
    serving: Pair
    admin: Pair
    controller_manager: Pair
    scheduler: Pair
    front_proxy_ca: Pair
    front_proxy_client: Pair
    service_account_key: Path
    service_account_pub: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
    pair = Pair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    pair.key.chmod(0o600)
    return pair


def _builder(subject: x509.Name, issuer: x509.Name, public_key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def make_ca(directory: Path, stem: str, common: str) -> tuple[Pair, x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA allowed to sign leaf certificates."""
    key = _key()
    name = _name(common)
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return _write(directory, stem, cert, key), cert, key


def make_leaf(
    directory: Path,
    stem: str,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common: str,
    *,
    org: str | None = None,
    server_names: tuple[str, ...] = (),
    client: bool = False,
) -> Pair:
    """A certificate signed by the CA: a serving one when `server_names` are given (DNS names or IP
    addresses), a client one when `client` (CN is the user, O the group)."""
    key = _key()
    usages = []
    if server_names:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    if client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    builder = _builder(_name(common, org), ca_cert.subject, key.public_key()).add_extension(
        x509.ExtendedKeyUsage(usages), critical=False
    )
    if server_names:
        alt: list[x509.GeneralName] = []
        for entry in server_names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(entry)))
            except ValueError:
                alt.append(x509.DNSName(entry))
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    return _write(directory, stem, builder.sign(ca_key, hashes.SHA256()), key)


def make_cluster_pki(directory: Path) -> ClusterPKI:
    """Write every certificate and key a control plane needs into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_cert, ca_key = make_ca(directory, "ca", "pykueue-test-ca")
    serving = make_leaf(
        directory, "apiserver", ca_cert, ca_key, "kube-apiserver",
        server_names=(
            "127.0.0.1", "localhost", SERVICE_IP, "kubernetes", "kubernetes.default",
            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
        ),
    )
    admin = make_leaf(directory, "admin", ca_cert, ca_key, "pykueue-admin", org="system:masters", client=True)
    kcm = make_leaf(directory, "controller-manager", ca_cert, ca_key, "system:kube-controller-manager", client=True)
    sched = make_leaf(directory, "scheduler", ca_cert, ca_key, "system:kube-scheduler", client=True)
    fp_ca, fp_cert, fp_key = make_ca(directory, "front-proxy-ca", "pykueue-front-proxy-ca")
    fp_client = make_leaf(directory, "front-proxy-client", fp_cert, fp_key, "front-proxy-client", client=True)
    sa_key = _key()
    sa_priv, sa_pub = directory / "sa.key", directory / "sa.pub"
    sa_priv.write_bytes(
        sa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    sa_priv.chmod(0o600)
    sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return ClusterPKI(ca, serving, admin, kcm, sched, fp_ca, fp_client, sa_priv, sa_pub)
