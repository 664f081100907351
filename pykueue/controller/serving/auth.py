"""Delegated authentication and authorization for the controller's own HTTPS ports, as
k8s.io/apiserver's extension servers (upstream Kueue's visibility server) and controller-runtime's
secure metrics filter do: the API server decides who a caller is and what it may do.

Authentication, first match wins (k8s.io/apiserver's union):

1. a front-proxy client certificate (the API aggregator's): signed by a CA of
   ``requestheader-client-ca-file`` and, when ``requestheader-allowed-names`` is not empty, with a
   common name in it. Only then are the ``X-Remote-User``/``-Group``/``-Extra-*`` headers (the names the
   ConfigMap lists) trusted; a request that carries them without such a certificate is not
   authenticated by them;
2. another client certificate signed by a CA of ``client-ca-file``: user = CN, groups = O;
3. a bearer token, checked with a TokenReview.

All of those come from the ``kube-system/extension-apiserver-authentication`` ConfigMap, which
:class:`Delegated` watches, so a rotated CA or a new allowed name takes effect without a restart.
Every authenticated caller is in ``system:authenticated`` too (k8s.io/apiserver's
AuthenticatedGroupAdder): the front proxy names the aggregator's own identities (``system:aggregator``
fetching OpenAPI, ``system:kube-aggregator`` falling back to legacy discovery) without groups, and RBAC
grants discovery and ``/openapi/*`` (``system:discovery``) to that group.

Authorization is a SubjectAccessReview per request (resource attributes for an API path,
non-resource ones for ``/metrics`` or discovery), except for ``system:masters``, which
k8s.io/apiserver's delegating authorizer also allows without asking (the API server would allow it
anything), the probe paths ``ALWAYS_ALLOW_PATHS`` (its default ``alwaysAllowPaths``), and attributes
a server marks ``deny`` (a path it never serves, refused without asking). Nothing authenticated is
401, not allowed is 403. No anonymous requests.

Decisions are cached briefly (k8s.io/apiserver caches both for 10 s): a token's review and an
allowed decision for ``ALLOW_TTL``, a rejected token or a denied decision for ``DENY_TTL``; API errors
are never cached. Each cache holds at most ``MAX_ENTRIES`` (oldest first out); tokens are kept by
their SHA-256, never in clear.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import ssl
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import unquote

import aiohttp
import orjson
from aiohttp import web
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pykueue.kube.client import ApiError, Kube
from pykueue.kube.resources import Resource

log = logging.getLogger("pykueue.auth")

CONFIG_MAP = Resource("", "v1", "configmaps", "ConfigMap", True)
CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME = "kube-system", "extension-apiserver-authentication"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
ALLOW_TTL = 10.0
DENY_TTL = 5.0
MAX_ENTRIES = 4096
RETRY_SECONDS = 5.0
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ALWAYS_ALLOW_PATHS = frozenset({"/healthz", "/readyz", "/livez"})  # DelegatingAuthorizationOptions' default
_ENCODING_DER = 2  # _ssl.ENCODING_DER: the encoding of _ssl.Certificate.public_bytes before Python 3.13

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


# ---- who and what ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class User:
    """An authenticated caller, as the API server's ``UserInfo``."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # sorted, hashable

    def review_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"user": self.name, "groups": list(self.groups)}
        if self.uid:
            spec["uid"] = self.uid
        if self.extra:
            spec["extra"] = {key: list(values) for key, values in self.extra}
        return spec


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do: a resource (group, resource, subresource, name, namespace) or a
    non-resource path, and the verb."""

    verb: str
    path: str = ""  # a non-resource request when set
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    deny: bool = False  # refused without asking: nothing is served there, whoever asks

    def review_attributes(self) -> dict[str, Any]:
        if self.path:
            return {"nonResourceAttributes": {"path": self.path, "verb": self.verb}}
        attrs = {"verb": self.verb, "group": self.group, "version": self.version, "resource": self.resource,
                 "subresource": self.subresource, "name": self.name, "namespace": self.namespace}
        return {"resourceAttributes": {k: v for k, v in attrs.items() if v}}

    def forbidden_message(self, user: str) -> str:
        """The API server's wording of a denial."""
        if self.path:
            return f'forbidden: User "{user}" cannot {self.verb} path "{self.path}"'
        resource = self.resource + (f"/{self.subresource}" if self.subresource else "")
        scope = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        subject = f'{self.resource}.{self.group} "{self.name}" is forbidden' if self.name else "forbidden"
        return (f'{subject}: User "{user}" cannot {self.verb} resource "{resource}" in API group '
                f'"{self.group}" {scope}')


# ---- the ConfigMap -----------------------------------------------------------------------------------


def _certificates(pem: str | None) -> tuple[x509.Certificate, ...]:
    if not pem:
        return ()
    try:
        return tuple(x509.load_pem_x509_certificates(pem.encode()))
    except ValueError as exc:
        log.warning("unreadable CA in the authentication ConfigMap", extra={"fields": {"error": str(exc)}})
        return ()


def _names(raw: str | None) -> tuple[str, ...]:
    """A JSON list of strings, as the API server writes them."""
    if not raw:
        return ()
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ()
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


@dataclass(frozen=True)
class AuthConfig:
    """What ``kube-system/extension-apiserver-authentication`` says about client certificates."""

    client_cas: tuple[x509.Certificate, ...] = ()
    request_header_cas: tuple[x509.Certificate, ...] = ()
    allowed_names: frozenset[str] = frozenset()
    username_headers: tuple[str, ...] = ()
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ()
    extra_prefixes: tuple[str, ...] = ()

    @classmethod
    def from_data(cls, data: dict[str, str] | None) -> AuthConfig:
        data = data or {}
        client, front = data.get("client-ca-file") or "", data.get("requestheader-client-ca-file") or ""
        return cls(client_cas=_certificates(client), request_header_cas=_certificates(front),
                   allowed_names=frozenset(_names(data.get("requestheader-allowed-names"))),
                   username_headers=_names(data.get("requestheader-username-headers")),
                   uid_headers=_names(data.get("requestheader-uid-headers")),
                   group_headers=_names(data.get("requestheader-group-headers")),
                   extra_prefixes=_names(data.get("requestheader-extra-headers-prefix")))


    def front_proxy_open(self) -> bool:
        """The request-header CA is one of the client CAs and no allowed names narrow it: then every
        client certificate it signs (a user's, a node's) passes as the front proxy, whose headers say
        who the caller is."""
        if self.allowed_names or not self.request_header_cas:
            return False
        clients = {cert.fingerprint(hashes.SHA256()) for cert in self.client_cas}
        return any(cert.fingerprint(hashes.SHA256()) in clients for cert in self.request_header_cas)


MAX_CHAIN = 8  # certificates between a client's leaf and its root, as far as any real PKI goes


def _allows_client_auth(cert: x509.Certificate) -> bool:
    """No extended key usage, or one that includes client authentication (or any): Go's x509 check for
    every certificate of a client's chain (k8s.io/apiserver asks for ExtKeyUsageClientAuth)."""
    try:
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return ExtendedKeyUsageOID.CLIENT_AUTH in usage or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usage


def _path_allows(ca: x509.Certificate, below: int) -> bool:
    try:
        length = ca.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length
    except x509.ExtensionNotFound:
        return True
    return length is None or below <= length


def _can_sign(ca: x509.Certificate, below: int) -> bool:
    """``ca`` is a CA certificate that may sign a chain with ``below`` intermediates under it."""
    try:
        constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        return False
    if not constraints.ca or not _path_allows(ca, below):
        return False
    try:
        usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return usage.key_cert_sign


def _signed_by(cert: x509.Certificate, issuer: x509.Certificate, now: datetime.datetime) -> bool:
    if issuer.subject != cert.issuer or not issuer.not_valid_before_utc <= now <= issuer.not_valid_after_utc:
        return False
    try:
        cert.verify_directly_issued_by(issuer)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def _issued_by(cert: x509.Certificate, cas: tuple[x509.Certificate, ...], now: datetime.datetime,
               intermediates: tuple[x509.Certificate, ...] = ()) -> bool:
    """``cert`` is valid now and chains to one of ``cas``: signed by it directly, or through
    ``intermediates`` (those the client sent), each a CA valid now, within its path length, allowed to
    sign certificates and to authenticate clients, as Go's ``x509.Certificate.Verify`` builds a chain.
    ``cas`` are trusted as listed, but a path length they set still bounds the intermediates (as Go)."""
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc or not _allows_client_auth(cert):
        return False

    def chains(current: x509.Certificate, depth: int, seen: frozenset[bytes]) -> bool:
        if any(_signed_by(current, ca, now) and _path_allows(ca, depth) for ca in cas):
            return True
        if depth >= MAX_CHAIN:
            return False
        for middle in intermediates:
            fingerprint = middle.fingerprint(hashes.SHA256())
            if fingerprint in seen or not _can_sign(middle, depth) or not _allows_client_auth(middle):
                continue
            if _signed_by(current, middle, now) and chains(middle, depth + 1, seen | {fingerprint}):
                return True
        return False

    return chains(cert, 0, frozenset())


def _attribute(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in cert.subject.get_attributes_for_oid(oid)]


# ---- a small TTL cache -------------------------------------------------------------------------------


@dataclass
class TTLCache(Generic[K, V]):
    """At most ``max_entries`` values, each until its own expiry on ``clock`` (oldest evicted first)."""

    max_entries: int = MAX_ENTRIES
    clock: Callable[[], float] = time.monotonic
    _items: OrderedDict[K, tuple[float, V]] = field(default_factory=OrderedDict)

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self.clock():
            del self._items[key]
            return None
        return item[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        self._items.pop(key, None)
        self._items[key] = (self.clock() + ttl, value)
        while len(self._items) > self.max_entries:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


# ---- the authenticator and authorizer ----------------------------------------------------------------


class AuthError(Exception):
    """The API server could not be asked (not a denial): the caller gets 500, nothing is cached."""


Reviewer = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]  # POST path, body -> answer


class Delegated:
    """Authentication and authorization delegated to the API server, for one process's servers."""

    def __init__(self, kube: Kube | None, *, reviewer: Reviewer | None = None,
                 clock: Callable[[], float] = time.monotonic, allow_ttl: float = ALLOW_TTL,
                 deny_ttl: float = DENY_TTL, max_entries: int = MAX_ENTRIES,
                 now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)) -> None:
        self.kube = kube
        self._review = reviewer or self._post
        self.allow_ttl, self.deny_ttl = allow_ttl, deny_ttl
        self.tokens: TTLCache[str, tuple[User | None]] = TTLCache(max_entries, clock)
        self.decisions: TTLCache[tuple[User, Attributes], bool] = TTLCache(max_entries, clock)
        self.config = AuthConfig()
        self.now = now
        self.listeners: list[Callable[[AuthConfig], None]] = []  # TLS contexts that load the CAs
        self.loaded = asyncio.Event()  # the ConfigMap has been read (or found absent) once
        self._task: asyncio.Task | None = None

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        assert self.kube is not None
        return await self.kube.request("POST", path, body=body)

    # ---- the ConfigMap ---------------------------------------------------------------------------

    def set_config(self, config: AuthConfig) -> None:
        changed = config != self.config
        self.config = config
        if changed:
            for listener in self.listeners:
                listener(config)
            log.info("client certificate authentication configured", extra={"fields": {
                "clientCAs": len(config.client_cas), "requestHeaderCAs": len(config.request_header_cas),
                "allowedNames": ",".join(sorted(config.allowed_names))}})
            if config.front_proxy_open():
                log.warning("the front-proxy CA also signs client certificates and no "
                            "requestheader-allowed-names are set: any client certificate of that CA can "
                            "send X-Remote-User and act as anyone on the visibility and dashboard ports; set "
                            "--requestheader-allowed-names on the API server (e.g. front-proxy-client)")

    async def start(self) -> None:
        """Read the ConfigMap once (so the first requests already see it), then follow it."""
        if self.kube is None or self._task is not None:
            return
        self._task = asyncio.create_task(self._follow(), name="auth-configmap")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.loaded.wait(), 30)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _follow(self) -> None:
        """List, then watch the one ConfigMap; start again from a list after any failure."""
        assert self.kube is not None
        selector = f"metadata.name={CONFIG_MAP_NAME}"
        while True:
            try:
                listed = await self.kube.request("GET", CONFIG_MAP.path(CONFIG_MAP_NAMESPACE),
                                                 query={"fieldSelector": selector})
                items = listed.get("items") or []
                if not items:
                    log.warning("no kube-system/extension-apiserver-authentication ConfigMap: client "
                                "certificates are not accepted, bearer tokens are")
                self.set_config(AuthConfig.from_data(items[0].get("data") if items else None))
                self.loaded.set()
                version = (listed.get("metadata") or {}).get("resourceVersion") or "0"
                async for event in self.kube.watch(CONFIG_MAP, version, namespace=CONFIG_MAP_NAMESPACE,
                                                   field_selector=selector):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind in ("ADDED", "MODIFIED"):
                        self.set_config(AuthConfig.from_data(obj.get("data")))
                    elif kind == "DELETED":
                        self.set_config(AuthConfig())
                    elif kind == "ERROR":
                        break
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the API server is away or refuses: keep the last, retry
                log.warning("cannot read the authentication ConfigMap; retrying", extra={"fields": {
                    "configMap": f"{CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME}", "error": str(exc)}})
                self.loaded.set()  # serve with what there is (bearer tokens at least)
                await asyncio.sleep(RETRY_SECONDS)

    # ---- authentication --------------------------------------------------------------------------

    def from_certificate(self, der: bytes | None, headers: Any, chain: tuple[bytes, ...] = ()) -> User | None:
        """The front proxy's user (from the headers) or the certificate's own; None when ``der``
        (the TLS peer's certificate, ``chain`` the other certificates it sent) proves neither."""
        if not der:
            return None
        try:
            cert = x509.load_der_x509_certificate(der)
            intermediates = tuple(x509.load_der_x509_certificate(c) for c in chain if c != der)
        except ValueError:
            return None
        config, now = self.config, self.now()
        # each in turn, as k8s.io/apiserver's union: a cluster may sign both kinds with one CA
        if config.request_header_cas and _issued_by(cert, config.request_header_cas, now, intermediates):
            common_name = next(iter(_attribute(cert, NameOID.COMMON_NAME)), "")
            if config.allowed_names and common_name not in config.allowed_names:
                log.info("front-proxy certificate with a name not allowed", extra={"fields": {"cn": common_name}})
            else:
                user = self._from_headers(headers)
                if user is not None:
                    return user
        if config.client_cas and _issued_by(cert, config.client_cas, now, intermediates):
            names = _attribute(cert, NameOID.COMMON_NAME)
            if names and names[0]:
                return User(names[0], groups=tuple(_attribute(cert, NameOID.ORGANIZATION_NAME)))
        return None

    def _from_headers(self, headers: Any) -> User | None:
        config = self.config
        name = next((v for h in config.username_headers if (v := headers.get(h))), "")
        if not name:
            return None
        uid = next((v for h in config.uid_headers if (v := headers.get(h))), "")
        groups = tuple(g for h in config.group_headers for g in headers.getall(h, ()))
        extra: dict[str, list[str]] = {}
        for prefix in config.extra_prefixes:
            for key in dict.fromkeys(headers.keys()):
                if key.lower().startswith(prefix.lower()):
                    extra.setdefault(unquote(key[len(prefix):]).lower(), []).extend(headers.getall(key))
        return User(name, uid, groups, tuple(sorted((k, tuple(v)) for k, v in extra.items())))

    @staticmethod
    def with_authenticated(user: User) -> User:
        """``user`` in ``system:authenticated`` (unless it says it is in it, or unauthenticated)."""
        if AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
            return user
        return User(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)

    async def from_token(self, token: str) -> User | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self.tokens.get(key)
        if cached is not None:
            return cached[0]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            review = await self._review(TOKEN_REVIEWS, body)
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise AuthError(f"TokenReview failed: {exc}") from None
        status = review.get("status") or {}
        user = None
        if status.get("authenticated") and (info := status.get("user") or {}).get("username"):
            extra = tuple(sorted((k, tuple(v)) for k, v in (info.get("extra") or {}).items()))
            user = User(info["username"], info.get("uid") or "", tuple(info.get("groups") or ()), extra)
        self.tokens.put(key, (user,), self.allow_ttl if user else self.deny_ttl)
        return user

    async def authenticate(self, request: web.Request, *, certificates: bool = True) -> User | None:
        """Who sent ``request``: by client certificate (when ``certificates``), else bearer token."""
        if certificates:
            ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            chain = peer_chain(ssl_object) if der else ()
            user = self.from_certificate(der, request.headers, chain)
            if user is not None:
                return self.with_authenticated(user)
        scheme, _, token = (request.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            user = await self.from_token(token.strip())
            return self.with_authenticated(user) if user is not None else None
        return None

    # ---- authorization ---------------------------------------------------------------------------

    async def authorize(self, user: User, attributes: Attributes) -> bool:
        if attributes.deny:
            return False
        if "system:masters" in user.groups:  # as the API server's own privileged-group authorizer
            return True
        if attributes.path in ALWAYS_ALLOW_PATHS:
            return True
        key = (user, attributes)
        cached = self.decisions.get(key)
        if cached is not None:
            return cached
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {**user.review_spec(), **attributes.review_attributes()}}
        try:
            review = await self._review(SUBJECT_ACCESS_REVIEWS, body)
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise AuthError(f"SubjectAccessReview failed: {exc}") from None
        allowed = bool((review.get("status") or {}).get("allowed"))
        self.decisions.put(key, allowed, self.allow_ttl if allowed else self.deny_ttl)
        return allowed


def peer_chain(ssl_object: Any) -> tuple[bytes, ...]:
    """The certificates (DER) the TLS peer sent, its own first: the public call from Python 3.13, the
    ``_ssl`` object's (which has it since 3.10) before."""
    getter = getattr(ssl_object, "get_unverified_chain", None)
    if getter is None:
        getter = getattr(getattr(ssl_object, "_sslobj", None), "get_unverified_chain", None)
    if getter is None:
        return ()
    chain = getter() or []
    return tuple(c if isinstance(c, bytes) else c.public_bytes(_ENCODING_DER) for c in chain)


# ---- aiohttp ---------------------------------------------------------------------------------------------

Guard = Callable[[web.Request], Attributes | None]  # what a request asks for; None: not guarded


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.Response(body=orjson.dumps(body), status=code, content_type="application/json")


def middleware(auth: Delegated, guard: Guard, *, certificates: bool = True):
    """An aiohttp middleware: requests ``guard`` names attributes for are authenticated (401) and
    authorized (403) before their handler runs; the others (webhooks, probes) pass untouched."""
    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        attributes = guard(request)
        if attributes is None:
            return await handler(request)
        try:
            user = await auth.authenticate(request, certificates=certificates)
            if user is None:
                return _status(401, "Unauthorized", "Unauthorized")
            if not await auth.authorize(user, attributes):
                log.debug("forbidden", extra={"fields": {"user": user.name, "path": request.path}})
                return _status(403, "Forbidden", attributes.forbidden_message(user.name))
        except AuthError as exc:
            log.warning("cannot check a request", extra={"fields": {"path": request.path, "error": str(exc)}})
            return _status(500, "InternalError", "Internal error occurred: cannot authenticate or authorize")
        return await handler(request)
    return check


def trust_client_cas(context: ssl.SSLContext, auth: Delegated) -> None:
    """Ask TLS clients for a certificate, verified against the ConfigMap's CAs, now and whenever they
    change. The TLS layer only filters (a CA once added stays in OpenSSL's store); which CA signed a
    certificate, and whether that CA is still listed, is decided per request by :class:`Delegated`."""
    loaded: set[str] = set()

    def load(config: AuthConfig) -> None:
        for cert in (*config.client_cas, *config.request_header_cas):
            pem = cert.public_bytes(serialization.Encoding.PEM).decode()
            if pem not in loaded:
                context.load_verify_locations(cadata=pem)
                loaded.add(pem)
        if loaded:
            context.verify_mode = ssl.CERT_OPTIONAL

    load(auth.config)
    auth.listeners.append(load)
