"""The webhook server's certificates: a self-signed CA and a serving certificate it signs, renewed before
they expire, kept in a Secret (in a cluster) or a directory (a controller run locally).

As upstream's cert controller (open-policy-agent/cert-controller) does for Kueue: the Secret holds
``ca.crt``, ``ca.key``, ``tls.crt`` and ``tls.key``; the serving certificate names the webhook Service
(``<service>.<namespace>.svc``). It also names ``localhost`` and ``127.0.0.1``, so that a controller run
outside the cluster (the test clusters, a developer's laptop) can be called at ``https://127.0.0.1:PORT``.
The CA is kept while it has time left, so renewing the serving certificate needs no new CA bundle.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=3650)
CERT_VALIDITY = datetime.timedelta(days=365)
# Renew this long before the end of validity: upstream's cert controller's lookahead.
LOOKAHEAD = datetime.timedelta(days=90)
CA_NAME, CA_ORG = "pykueue-ca", "pykueue"
LOCAL_NAMES = ("localhost", "127.0.0.1")
FILES = ("ca.crt", "ca.key", "tls.crt", "tls.key")


@dataclass(frozen=True, slots=True)
class Bundle:
    """PEM bytes of the CA and of the serving certificate, with their keys."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def as_data(self) -> dict[str, str]:
        """A Secret's ``data``: base64 of each file."""
        return {name: base64.b64encode(value).decode() for name, value in zip(FILES, self._values(), strict=True)}

    @classmethod
    def from_data(cls, data: dict[str, str] | None) -> Bundle | None:
        data = data or {}
        if not all(data.get(name) for name in FILES):
            return None
        try:
            return cls(*(base64.b64decode(data[name]) for name in FILES))
        except ValueError:
            return None

    def _values(self) -> tuple[bytes, bytes, bytes, bytes]:
        return self.ca_cert, self.ca_key, self.cert, self.key

    @property
    def ca_bundle(self) -> str:
        """The ``caBundle`` of a webhook's clientConfig."""
        return base64.b64encode(self.ca_cert).decode()


def service_names(service: str, namespace: str) -> tuple[str, ...]:
    """What the serving certificate must name: the Service as the API server dials it, and loopback."""
    return (f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local", *LOCAL_NAMES)


def _now(now: datetime.datetime | None) -> datetime.datetime:
    return now if now is not None else datetime.datetime.now(datetime.UTC)


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
             now: datetime.datetime, validity: datetime.timedelta) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))  # tolerate a little clock skew
        .not_valid_after(now + validity)
    )


def _new_ca(now: datetime.datetime, validity: datetime.timedelta) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, CA_ORG)])
    usage = x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                          encipher_only=False, decipher_only=False)
    cert = (
        _builder(name, name, key.public_key(), now, validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem(key)


def _san(names: tuple[str, ...]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _new_leaf(ca_cert_pem: bytes, ca_key_pem: bytes, names: tuple[str, ...], now: datetime.datetime,
              validity: datetime.timedelta) -> tuple[bytes, bytes]:
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    # A common name holds at most 64 characters; clients check the SANs, which carry every name whole.
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])])
    validity = min(validity, ca_cert.not_valid_after_utc - now)  # never outlive the CA
    cert = (
        _builder(subject, ca_cert.subject, key.public_key(), now, validity)
        .add_extension(_san(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem(key)


def _pair(cert: x509.Certificate, key_pem: bytes) -> bool:
    """``key_pem`` is the private key of ``cert``."""
    try:
        key = serialization.load_pem_private_key(key_pem, None)
    except (ValueError, TypeError):
        return False
    return key.public_key() == cert.public_key()


def renewal_reason(bundle: Bundle | None, names: tuple[str, ...], now: datetime.datetime | None = None,
                   lookahead: datetime.timedelta = LOOKAHEAD) -> str | None:
    """Why ``bundle`` must be renewed (a few words for the log), or None when it is good as it is."""
    if bundle is None:
        return "no certificate yet"
    now = _now(now)
    try:
        ca = x509.load_pem_x509_certificate(bundle.ca_cert)
        cert = x509.load_pem_x509_certificate(bundle.cert)
        key = serialization.load_pem_private_key(bundle.key, None)
    except ValueError as exc:
        return f"unreadable: {exc}"
    if not _pair(ca, bundle.ca_key):
        return "the CA key is not the CA certificate's"
    if key.public_key() != cert.public_key():
        return "the serving key is not the serving certificate's"
    if ca.not_valid_after_utc - now < lookahead:
        return "the CA expires soon"
    if cert.not_valid_after_utc - now < lookahead:
        return "the serving certificate expires soon"
    if cert.issuer != ca.subject:
        return "the serving certificate is not the CA's"
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError) as exc:
        return f"the serving certificate is not signed by the CA ({type(exc).__name__})"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    have = {str(v) for v in san.get_values_for_type(x509.DNSName)}
    have |= {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    if not set(names) <= have:
        return f"the serving certificate does not name {', '.join(sorted(set(names) - have))}"
    return None


def renew(bundle: Bundle | None, names: tuple[str, ...], now: datetime.datetime | None = None, *,
          lookahead: datetime.timedelta = LOOKAHEAD, ca_validity: datetime.timedelta = CA_VALIDITY,
          cert_validity: datetime.timedelta = CERT_VALIDITY) -> Bundle:
    """A new serving certificate, signed by the old CA when that one still has time left (so the CA
    bundle in the webhook configurations stays valid), else by a new CA."""
    now = _now(now)
    ca_cert = ca_key = None
    if bundle is not None:
        try:
            ca = x509.load_pem_x509_certificate(bundle.ca_cert)
            if _pair(ca, bundle.ca_key) and ca.not_valid_after_utc - now >= lookahead:
                ca_cert, ca_key = bundle.ca_cert, bundle.ca_key
        except ValueError:
            pass
    if ca_cert is None or ca_key is None:
        ca_cert, ca_key = _new_ca(now, ca_validity)
    cert, key = _new_leaf(ca_cert, ca_key, names, now, cert_validity)
    return Bundle(ca_cert, ca_key, cert, key)


# --- where they live ----------------------------------------------------------------------------------


class CertDirError(Exception):
    """The certificate directory cannot be made private (someone else's, a link, not a directory)."""


def default_parent(environ: dict[str, str] | None = None, in_pod: bool | None = None) -> Path:
    """Where a fresh private certificate directory goes when none is named: the pod's own ``/tmp``
    (an emptyDir no other pod sees), else the user's runtime directory (``$XDG_RUNTIME_DIR``, 0700 by
    its specification), else the user's cache directory -- never a fixed path in a shared ``/tmp``.
    A process killed with SIGKILL leaves its directory behind there (0700, this user's only)."""
    environ = dict(os.environ) if environ is None else environ
    if in_pod is None:
        in_pod = bool(environ.get("KUBERNETES_SERVICE_HOST")) and Path(
            "/var/run/secrets/kubernetes.io/serviceaccount/token").exists()
    if in_pod:
        return Path("/tmp")
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute() and Path(runtime).is_dir():
        return Path(runtime) / "pykueue"
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pykueue" / "certs"  # its own: ~/.cache/pykueue (the binaries) keeps its mode


def fresh_dir(parent: Path, prefix: str = "serving-certs-") -> Path:
    """A new directory only this process knows, created 0700 under ``parent``. ``parent`` is made
    private too, unless it is a shared scratch directory (``_shared``), such as the pod's ``/tmp``:
    an emptyDir the kubelet makes root's and world-writable (1777 on tmpfs, 0777 on the node's disk)
    while the container runs as uid 65532. That one is left as it is and only the new directory
    inside is private, as upstream's certificate writer does with its own directory under /tmp."""
    if not _shared(parent):
        private_dir(parent)
    return private_dir(Path(tempfile.mkdtemp(prefix=prefix, dir=parent)))


def _shared(directory: Path) -> bool:
    """A real, world-writable directory of root or of this user (``/tmp``, a pod's emptyDir), whose
    own parents pass ``private_dir``'s check: a place to make a private directory in, not to close."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()) or not st.st_mode & stat.S_IWOTH:
        return False
    _check_parents(Path(os.path.abspath(directory)))
    return True


def private_dir(directory: Path) -> Path:
    """``directory``, created 0700 when missing; an existing one must be a real directory of this
    user (not a link) and is made 0700. Its parents must not belong to another (non-root) user, who
    could swap it for one of theirs."""
    directory = Path(os.path.abspath(directory))
    uid = os.geteuid()
    _check_parents(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise CertDirError(f"{directory}: not a directory (a link or a file is never followed)")
    if st.st_uid != uid:
        raise CertDirError(f"{directory}: belongs to uid {st.st_uid}, not to this process (uid {uid})")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)
    return directory


def _check_parents(directory: Path) -> None:
    """No existing parent of ``directory`` may belong to another (non-root) user unless it is sticky."""
    uid = os.geteuid()
    for parent in reversed(directory.parents):
        try:
            st = os.lstat(parent)
        except FileNotFoundError:
            break
        if stat.S_ISDIR(st.st_mode) and st.st_uid not in (0, uid) and not st.st_mode & stat.S_ISVTX:
            raise CertDirError(f"{directory}: its parent {parent} belongs to another user (uid {st.st_uid})")


def _write_file(dir_fd: int, name: str, value: bytes) -> None:
    """Exclusive creation of a temporary name (no link followed), then an atomic rename over ``name``."""
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(value)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_dir(directory: Path, bundle: Bundle, *, with_ca_key: bool = True) -> None:
    """The files the TLS server loads, in a private directory: each written under a fresh name and
    renamed into place. Without ``with_ca_key`` (the key lives in the Secret) a ``ca.key`` left from
    an earlier run is removed, so the key on disk is never another CA's."""
    private_dir(directory)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name, value in zip(FILES, bundle._values(), strict=True):
            if name == "ca.key" and not with_ca_key:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dir_fd)
                continue
            _write_file(dir_fd, name, value)
    finally:
        os.close(dir_fd)


def read_dir(directory: Path) -> Bundle | None:
    """The bundle in ``directory`` (for tests and tools: the server keeps its own in memory and
    never trusts what it finds on disk)."""
    try:
        return Bundle(*((directory / name).read_bytes() for name in FILES))
    except OSError:
        return None
