"""A worker cluster's kubeconfig, as MultiKueue takes it from a Secret: read into a typed, bounded model,
checked as upstream's ``validateKubeconfig`` (pkg/controller/admissionchecks/multikueue,
multikueuecluster.go) checks it and more strictly, then turned into a connection built from the checked
fields alone.

What the Secret's author controls goes nowhere unchecked:

- **Bounded parsing** (``parse``): at most ``MAX_BYTES``, then JSON or YAML read by an iterative builder
  over the parser's events (no recursion), with at most ``MAX_DEPTH`` levels and ``MAX_NODES`` nodes,
  an alias counted at its expanded size (an alias bomb stops at the bound), no duplicate keys, merge
  keys or non-standard tags, one document. A syntax error is reported by line and column only, never
  with the document's text (a token may be on that line).
- **Strict types** (``Kubeconfig``): every field used is validated, names and references are strings
  (a YAML ``1`` or ``true`` is not the name ``"1"``), unique within their section; a reference that
  names nothing is an error (no fallback to the first cluster).
- **Every user and every cluster checked**, not only the current context's, as upstream does for its
  per-cluster rules: no ``exec`` plugins, auth providers, basic auth (``username``/``password``, or
  credentials in the server URL), ``tokenFile``, client certificate or key file paths, certificate
  authority file paths, skipped TLS verification; a server URL per cluster, https, whose host is an IP
  or a DNS name (upstream's ``isValidHostname``). Refusals are ``InsecureKubeconfig`` (upstream's reason
  ``InsecureKubeConfig``), anything unreadable or inconsistent ``KubeconfigError`` (``BadKubeConfig``).
- **The connection** (``configuration``, ``connect``): a ``kubernetes_asyncio`` Configuration made from
  the current context's server, certificate authority, client certificate and key, token, TLS server
  name and proxy; no kubeconfig loader of the library ever sees the document.

``load`` is pure and synchronous (the controller runs it in a thread and caches its answer by the
Secret's bytes)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import json
import os
import re
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio import client as k8s_client
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, StringConstraints, ValidationError
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from pykueue.api import names
from pykueue.kube.client import Kube

MAX_BYTES = 256 * 1024  # a flattened kubeconfig with a few clusters is a few KiB; a Secret holds 1 MiB
MAX_DEPTH = 32  # a kubeconfig nests about 7 levels (users, a user, exec, env, an entry, ...)
MAX_NODES = 20_000  # scalars and collections, an alias counted at its expanded size
MAX_NAME = 512  # the length of a cluster, user or context name


class KubeconfigError(ValueError):
    """A kubeconfig MultiKueue will not use (upstream's reason ``BadKubeConfig``); the message says why,
    without quoting the document's values."""

    reason = "BadKubeConfig"


class InsecureKubeconfig(KubeconfigError):
    """A kubeconfig upstream's validateKubeconfig (or this stricter check) refuses."""

    reason = "InsecureKubeConfig"


# --- bounded parsing ---

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: fast, and not recursive
_NO_KEY = object()


def _bad(message: str) -> KubeconfigError:
    return KubeconfigError(f"failed to parse kubeconfig: {message}")


def _at(mark: Any) -> str:
    if mark is None:
        return ""
    return f" at line {mark.line + 1}, column {mark.column + 1}"


class _Frame:
    __slots__ = ("anchor", "height", "key", "key_mark", "start", "value")

    def __init__(self, value: Any, anchor: str | None, start: int) -> None:
        self.value = value
        self.anchor = anchor
        self.start = start  # the node count before this node
        self.height = 0  # the deepest child's height
        self.key: Any = _NO_KEY  # a mapping's pending key
        self.key_mark: Any = None


def _yaml(data: bytes) -> Any:
    """One YAML document as plain values, built from the parser's events without recursion."""
    resolver = Resolver()
    constructor = SafeConstructor()
    anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> (value, expanded size, height)
    stack: list[_Frame] = []
    count = 0
    documents = 0
    result: Any = None

    def add(value: Any, height: int, mark: Any, collection: bool) -> None:
        nonlocal result
        if not stack:
            result = value
            return
        top = stack[-1]
        top.height = max(top.height, height)
        if isinstance(top.value, list):
            top.value.append(value)
        elif top.key is _NO_KEY:
            if collection:
                raise _bad(f"a mapping key must be a scalar{_at(mark)}")
            if value in top.value:
                raise _bad(f"duplicate mapping key{_at(mark)}")
            top.key, top.key_mark = value, mark
        else:
            top.value[top.key] = value
            top.key = _NO_KEY

    try:
        for event in yaml.parse(data, Loader=_PARSER):
            if isinstance(event, ev.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _bad(f"more than one document{_at(event.start_mark)}")
                continue
            if isinstance(event, ev.StreamStartEvent | ev.StreamEndEvent | ev.DocumentEndEvent):
                continue
            if isinstance(event, ev.AliasEvent):
                if event.anchor not in anchors:
                    raise _bad(f"an alias names no finished anchor{_at(event.start_mark)}")
                value, size, height = anchors[event.anchor]
                count += size
                if count > MAX_NODES:
                    raise _bad(f"more than {MAX_NODES} nodes (aliases expanded){_at(event.start_mark)}")
                if len(stack) + height > MAX_DEPTH:
                    raise _bad(f"nested deeper than {MAX_DEPTH} levels{_at(event.start_mark)}")
                add(value, height, event.start_mark, not isinstance(value, str | int | float | bool | None))
                continue
            if isinstance(event, ev.ScalarEvent):
                count += 1
                if count > MAX_NODES:
                    raise _bad(f"more than {MAX_NODES} nodes{_at(event.start_mark)}")
                tag = event.tag
                if tag is None or tag == "!":
                    tag = resolver.resolve(ScalarNode, event.value, event.implicit)
                if tag == _MERGE_TAG:
                    raise _bad(f"merge keys are not supported{_at(event.start_mark)}")
                node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
                try:
                    value = constructor.construct_object(node)
                    hash(value)
                except (ValueError, TypeError, OverflowError):  # an int past Python's digit limit, a bad date
                    raise _bad(f"unreadable scalar{_at(event.start_mark)}") from None
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1, 1)
                add(value, 1, event.start_mark, False)
                continue
            if isinstance(event, ev.MappingStartEvent | ev.SequenceStartEvent):
                mapping = isinstance(event, ev.MappingStartEvent)
                if event.tag not in (None, "!", _MAP_TAG if mapping else _SEQ_TAG):
                    raise _bad(f"tags other than the standard ones are not supported{_at(event.start_mark)}")
                if stack and not isinstance(stack[-1].value, list) and stack[-1].key is _NO_KEY:
                    raise _bad(f"a mapping key must be a scalar{_at(event.start_mark)}")
                count += 1
                if count > MAX_NODES:
                    raise _bad(f"more than {MAX_NODES} nodes{_at(event.start_mark)}")
                if len(stack) + 1 > MAX_DEPTH:
                    raise _bad(f"nested deeper than {MAX_DEPTH} levels{_at(event.start_mark)}")
                stack.append(_Frame({} if mapping else [], event.anchor, count - 1))
                continue
            if isinstance(event, ev.MappingEndEvent | ev.SequenceEndEvent):
                frame = stack.pop()
                height = frame.height + 1
                if frame.anchor is not None:
                    anchors[frame.anchor] = (frame.value, count - frame.start, height)
                add(frame.value, height, event.start_mark, True)
                continue
            raise _bad(f"unexpected YAML event{_at(getattr(event, 'start_mark', None))}")
    except yaml.MarkedYAMLError as exc:
        # The problem's wording may quote the document (a tag, an anchor), its snippet the whole line.
        raise _bad(f"invalid YAML ({type(exc).__name__}){_at(exc.problem_mark or exc.context_mark)}") from None
    except yaml.YAMLError as exc:  # ReaderError: undecodable bytes or a control character
        position = getattr(exc, "position", None)
        where = f" at byte {position}" if isinstance(position, int) else ""
        raise _bad(f"invalid YAML ({type(exc).__name__}){where}") from None
    return result


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _bad("duplicate key in a JSON object")
        out[key] = value
    return out


def _bounded(doc: Any) -> None:
    """JSON's nodes and depth within the bounds (it has no aliases)."""
    todo = [(doc, 1)]
    count = 0
    while todo:
        value, depth = todo.pop()
        count += 1
        if count > MAX_NODES:
            raise _bad(f"more than {MAX_NODES} nodes")
        if depth > MAX_DEPTH:
            raise _bad(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            todo.extend((v, depth + 1) for v in value.values())
            count += len(value)  # the keys
        elif isinstance(value, list):
            todo.extend((v, depth + 1) for v in value)


def parse(data: bytes) -> dict[str, Any]:
    """The kubeconfig document (JSON or YAML) as plain values within the bounds, or ``KubeconfigError``."""
    if len(data) > MAX_BYTES:
        raise _bad(f"larger than {MAX_BYTES // 1024} KiB")
    doc: Any = None
    parsed = False
    if data.lstrip()[:1] == b"{":  # JSON; on failure it may still be a YAML flow mapping
        try:
            doc = json.loads(data, object_pairs_hook=_unique_pairs)
            parsed = True
        except KubeconfigError:
            raise
        except (ValueError, RecursionError):
            pass
        if parsed:
            _bounded(doc)
    if not parsed:
        doc = _yaml(data)
    if not isinstance(doc, dict):
        raise _bad("not a mapping")
    return doc


# --- the typed model ---

Name = Annotated[StrictStr, StringConstraints(min_length=1, max_length=MAX_NAME)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class Cluster(_Model):
    server: StrictStr | None = None
    certificate_authority_data: StrictStr | None = Field(None, alias="certificate-authority-data")
    tls_server_name: StrictStr | None = Field(None, alias="tls-server-name")
    proxy_url: StrictStr | None = Field(None, alias="proxy-url")
    insecure_skip_tls_verify: StrictBool | None = Field(None, alias="insecure-skip-tls-verify")
    certificate_authority: Any = Field(None, alias="certificate-authority")  # refused whatever its value


class User(_Model):
    token: StrictStr | None = None
    client_certificate_data: StrictStr | None = Field(None, alias="client-certificate-data")
    client_key_data: StrictStr | None = Field(None, alias="client-key-data")
    # refused whatever their value:
    token_file: Any = Field(None, alias="tokenFile")
    username: Any = None
    password: Any = None
    exec_: Any = Field(None, alias="exec")
    auth_provider: Any = Field(None, alias="auth-provider")
    client_certificate: Any = Field(None, alias="client-certificate")
    client_key: Any = Field(None, alias="client-key")
    impersonate: Any = Field(None, alias="as")
    impersonate_uid: Any = Field(None, alias="as-uid")
    impersonate_groups: Any = Field(None, alias="as-groups")
    impersonate_extra: Any = Field(None, alias="as-user-extra")


class Context(_Model):
    cluster: Name
    user: Name


class NamedCluster(_Model):
    name: Name
    cluster: Cluster


class NamedUser(_Model):
    name: Name
    user: User


class NamedContext(_Model):
    name: Name
    context: Context


class Kubeconfig(_Model):
    current_context: Name = Field(alias="current-context")
    clusters: list[NamedCluster] | None = None
    users: list[NamedUser] | None = None
    contexts: list[NamedContext] | None = None


def _where(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def model(doc: dict[str, Any]) -> Kubeconfig:
    """The document as a ``Kubeconfig``, or ``KubeconfigError`` naming the first bad field (not its value)."""
    try:
        return Kubeconfig.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise KubeconfigError(f"invalid kubeconfig: {_where(first['loc']) or 'document'}: {first['msg']}{more}") \
            from None


# --- the checks ---

@dataclass(frozen=True)
class Settings:
    """What the connection is made of: the current context's checked fields, decoded."""

    server: str
    certificate_authority: bytes | None = None  # PEM
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    token: str | None = None
    tls_server_name: str | None = None
    proxy: str | None = None


_CONTROL = re.compile(r"[\x00-\x20\x7f]")  # whitespace and control characters, which urlsplit drops or keeps


def _host_name(host: str) -> bool:
    """An IP or a DNS name, as upstream's isValidHostname takes a server's host."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(host) and not names.dns1123_subdomain(host.lower())


def _valid_host(server: str) -> bool:
    try:
        host = urlsplit(server).hostname or ""
    except ValueError:
        return False
    return _host_name(host)


def _unique(kind: str, items: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if item.name in out:
            raise KubeconfigError(f"invalid kubeconfig: duplicate {kind} name {item.name}")
        out[item.name] = item
    return out


def _insecure_user(name: str, user: User) -> str | None:
    if user.token_file is not None:
        return f"tokenFile is not allowed for user {name}"
    if user.username is not None or user.password is not None:
        return f"basic auth is not allowed for user {name}"
    if user.exec_ is not None:
        return f"exec plugins are not allowed for user {name}"
    if user.auth_provider is not None:
        return f"auth providers are not allowed for user {name}"
    if user.client_certificate is not None or user.client_key is not None:
        return ("client-certificate and client-key file paths are not allowed, use client-certificate-data "
                f"and client-key-data for user {name}")
    return None


def _insecure_cluster(name: str, cluster: Cluster) -> str | None:
    if cluster.insecure_skip_tls_verify:
        return f"insecure TLS verification is not allowed for cluster {name}"
    if cluster.certificate_authority is not None:
        return f"certificate-authority file paths are not allowed, use certificate-authority-data for cluster {name}"
    if not cluster.server:
        return f"server URL is required for cluster {name}"
    if _CONTROL.search(cluster.server):
        return f"untrusted server endpoint for cluster {name}"
    try:
        url = urlsplit(cluster.server)
        url.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        return f"untrusted server endpoint for cluster {name}"
    if url.scheme.lower() != "https":
        return f"the server URL must be https for cluster {name}"
    if url.username is not None or url.password is not None:
        return f"basic auth is not allowed for cluster {name}"
    if not _valid_host(cluster.server):
        return f"untrusted server endpoint for cluster {name}"
    return None


_B64_SPACE = re.compile(rb"\s+")
_TOKEN = re.compile(r"[\x21-\x7e]+")  # visible ASCII, as an HTTP header value carries it


def _decoded(value: str | None, what: str) -> bytes | None:
    if not value:
        return None
    try:
        return base64.b64decode(_B64_SPACE.sub(b"", value.encode("ascii")), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise KubeconfigError(f"invalid kubeconfig: {what} is not valid base64") from None


def _proxy(name: str, value: str | None) -> str | None:
    if not value:
        return None
    try:
        if _CONTROL.search(value):
            raise ValueError("control character")
        url = urlsplit(value)
        url.port  # noqa: B018
    except ValueError:
        url = None
    if url is None or url.scheme.lower() not in ("http", "https") or not _valid_host(value):
        raise KubeconfigError(f"invalid kubeconfig: proxy-url of cluster {name} must be an http or https URL "
                              "whose host is an IP or a DNS name")
    return value


def check(config: Kubeconfig) -> Settings:
    """The current context's settings, once every user and cluster passed; ``InsecureKubeconfig`` for what
    upstream refuses (and the stricter rules), ``KubeconfigError`` for a document that does not hold."""
    clusters = _unique("cluster", config.clusters or [])
    users = _unique("user", config.users or [])
    contexts = _unique("context", config.contexts or [])
    for name, named_user in users.items():
        if (why := _insecure_user(name, named_user.user)) is not None:
            raise InsecureKubeconfig(why)
    for name, named_cluster in clusters.items():
        if (why := _insecure_cluster(name, named_cluster.cluster)) is not None:
            raise InsecureKubeconfig(why)
    for name, named_user in users.items():
        user = named_user.user
        if any(v is not None for v in (user.impersonate, user.impersonate_uid, user.impersonate_groups,
                                       user.impersonate_extra)):
            raise KubeconfigError(f"invalid kubeconfig: impersonation (as, as-uid, as-groups, as-user-extra) "
                                  f"is not supported for user {name}")
        if bool(user.client_certificate_data) != bool(user.client_key_data):
            raise KubeconfigError(f"invalid kubeconfig: client-certificate-data and client-key-data go together "
                                  f"for user {name}")
        if user.token and not _TOKEN.fullmatch(user.token):
            raise KubeconfigError(f"invalid kubeconfig: the token of user {name} is not a bearer token")
    if not clusters:
        raise KubeconfigError("invalid kubeconfig: no cluster in the kubeconfig")
    context = contexts.get(config.current_context)
    if context is None:
        raise KubeconfigError(f"invalid kubeconfig: current-context {config.current_context} names no context")
    named_cluster = clusters.get(context.context.cluster)
    if named_cluster is None:
        raise KubeconfigError(f"invalid kubeconfig: context {context.name} names cluster "
                              f"{context.context.cluster}, which the kubeconfig does not have")
    named_user = users.get(context.context.user)
    if named_user is None:
        raise KubeconfigError(f"invalid kubeconfig: context {context.name} names user {context.context.user}, "
                              "which the kubeconfig does not have")
    cluster, user = named_cluster.cluster, named_user.user
    assert cluster.server is not None
    ca = _decoded(cluster.certificate_authority_data, f"certificate-authority-data of cluster {named_cluster.name}")
    if ca is not None:
        try:
            ssl.create_default_context(cadata=ca.decode("ascii"))
        except (UnicodeDecodeError, ssl.SSLError, ValueError):
            raise KubeconfigError(f"invalid kubeconfig: certificate-authority-data of cluster {named_cluster.name} "
                                  "holds no PEM certificate") from None
    tls_name = cluster.tls_server_name or None
    if tls_name is not None and not _host_name(tls_name):
        raise KubeconfigError(f"invalid kubeconfig: tls-server-name of cluster {named_cluster.name} is not an IP "
                              "or a DNS name")
    return Settings(
        server=cluster.server.rstrip("/"),
        certificate_authority=ca,
        client_certificate=_decoded(user.client_certificate_data, f"client-certificate-data of user {named_user.name}"),
        client_key=_decoded(user.client_key_data, f"client-key-data of user {named_user.name}"),
        token=user.token or None,
        tls_server_name=tls_name,
        proxy=_proxy(named_cluster.name, cluster.proxy_url),
    )


def load(data: bytes) -> Settings:
    """Secret bytes to the settings of a connection, or ``KubeconfigError`` (``InsecureKubeconfig``).
    Bounded in time and memory whatever the bytes; pure, so it may run in a thread."""
    return check(model(parse(data)))


# --- the connection ---

_TEMP: str | None = None


def _temp_dir() -> str:
    """One private directory per process for the certificate and key files the TLS context reads."""
    global _TEMP
    if _TEMP is None:
        _TEMP = tempfile.mkdtemp(prefix="pykueue-multikueue-")
        os.chmod(_TEMP, 0o700)
    return _TEMP


def _file(content: bytes) -> str:
    """A private file holding ``content``, named by its hash (a rotated Secret with the same certificate
    reuses it), written whole before it gets its name."""
    path = os.path.join(_temp_dir(), hashlib.sha256(content).hexdigest())
    if not os.path.exists(path):
        partial = f"{path}.{secrets.token_hex(8)}"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(partial, path)
    return path


def configuration(settings: Settings) -> k8s_client.Configuration:
    """The client configuration of these settings, and nothing else."""
    config = k8s_client.Configuration()
    config.host = settings.server
    config.verify_ssl = True
    if settings.certificate_authority is not None:
        config.ssl_ca_cert = _file(settings.certificate_authority)
    if settings.client_certificate is not None and settings.client_key is not None:
        config.cert_file = _file(settings.client_certificate)
        config.key_file = _file(settings.client_key)
    if settings.token is not None:
        config.api_key["BearerToken"] = f"Bearer {settings.token}"  # the name pykueue.kube.client asks for
    config.tls_server_name = settings.tls_server_name
    config.proxy = settings.proxy
    return config


def connect(settings: Settings) -> Kube:
    """A connection to the worker these settings name; ``KubeconfigError`` when the TLS context refuses
    the certificate authority, the client certificate or its key."""
    try:
        return Kube.from_configuration(configuration(settings))
    except ssl.SSLError as exc:
        raise KubeconfigError(f"invalid kubeconfig: the TLS context refused the certificates or the key "
                              f"({exc.reason or type(exc).__name__})") from None
    except (OSError, ValueError) as exc:
        raise KubeconfigError(f"invalid kubeconfig: the TLS context refused the certificates or the key "
                              f"({type(exc).__name__})") from None
