"""A worker's kubeconfig is refused for what upstream's validateKubeconfig refuses (the reason
InsecureKubeConfig) and more strictly, read within bounds and with strict types (BadKubeConfig), and
accepted when flattened with inline credentials, the connection made from its checked fields alone.
The tests of the bug of issue 50 drive the controller's own path from a Secret to a connection
(``Workers._connect``): a YAML ``1`` or ``true`` is not the name ``"1"``, so no check is skipped and no
exec plugin runs."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import ssl
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from aiohttp import web
from cryptography.x509.oid import NameOID

from pykueue.controller.multikueue import kubeconfig as kc
from pykueue.controller.multikueue.clusters import Worker, Workers, load_secret
from pykueue.kube.client import ApiError
from tests import certs

CA = certs.make_cert("worker-ca")
SERVING = certs.make_cert("127.0.0.1", CA, ca=False, ips=("127.0.0.1",))
ADMIN = certs.make_cert("pykueue-admin", CA, ca=False, orgs=("system:masters",))


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def flattened(server: str = "https://127.0.0.1:6443") -> str:
    """What ``kubectl config view --flatten --raw`` prints for a dev cluster's admin kubeconfig
    (tests/e2e/test_multikueue.py ``flattened``): certificates inline, one context."""
    return f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {_b64(certs.pem(CA[0]))}
    server: {server}
  name: pykueue-dev
contexts:
- context:
    cluster: pykueue-dev
    user: pykueue-admin
  name: pykueue-dev
current-context: pykueue-dev
kind: Config
preferences: {{}}
users:
- name: pykueue-admin
  user:
    client-certificate-data: {_b64(certs.pem(ADMIN[0]))}
    client-key-data: {_b64(certs.key_pem(ADMIN[1]))}
"""


GOOD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Config", "current-context": "w",
    "clusters": [{"name": "w", "cluster": {"server": "https://127.0.0.1:6443",
                                           "certificate-authority-data": _b64(certs.pem(CA[0]))}}],
    "users": [{"name": "u", "user": {"client-certificate-data": _b64(certs.pem(ADMIN[0])),
                                     "client-key-data": _b64(certs.key_pem(ADMIN[1]))}}],
    "contexts": [{"name": "w", "context": {"cluster": "w", "user": "u"}}],
}


def _dump(doc: dict[str, Any]) -> bytes:
    return yaml.safe_dump(doc).encode()


def _with(section: str, key: str, value: object) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    inner = "cluster" if section == "clusters" else "user"
    doc[section][0][inner][key] = value
    return doc


def _error(doc: dict[str, Any] | bytes) -> kc.KubeconfigError:
    with pytest.raises(kc.KubeconfigError) as caught:
        kc.load(doc if isinstance(doc, bytes) else _dump(doc))
    return caught.value


# --- the controller's path: Secret bytes to a connection ---

class FakeKube:
    """The manager's API server: Secrets by name, and the status patches written."""

    def __init__(self, secrets: dict[str, bytes]) -> None:
        self.secrets = secrets
        self.applied: list[dict[str, Any]] = []
        self.requested: list[object] = []  # the names asked for

    async def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.requested.append(name)
        if name not in self.secrets:
            raise ApiError(404, {"reason": "NotFound"}, "GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
        return {"metadata": {"name": name}, "data": {"kubeconfig": _b64(self.secrets[name])}}

    async def apply(self, res: Any, body: dict[str, Any], manager: str, subresource: str | None = None) -> None:
        self.applied.append(body)


def _workers(secrets: dict[str, bytes], clusters: dict[str, dict[str, Any]] | None = None) -> Workers:
    informers: Any = {"multikueueclusters": SimpleNamespace(store=clusters or {}),
                      "admissionchecks": SimpleNamespace(store={}), "multikueueconfigs": SimpleNamespace(store={})}
    return Workers(FakeKube(secrets), informers, "pykueue-system", "o",  # type: ignore[arg-type]
                   changed=lambda name: None, remote_event=lambda *a: None)


def _cluster(name: str, secret: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
            "metadata": {"name": name, "generation": 1},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}}}


def connect(data: bytes) -> tuple[bool, str, str]:
    """What the controller makes of a Secret holding ``data``: (Active, reason, message)."""
    workers = _workers({"s": data})
    worker = Worker("w")

    async def run() -> tuple[bool, str, str]:
        try:
            return await workers._connect(worker, _cluster("w", "s"))
        finally:
            await worker.close()

    return asyncio.run(run())


def _exec(marker: Path) -> dict[str, Any]:
    return {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh",
            "args": ["-c", f"touch {marker}; echo '{{}}'"], "interactiveMode": "Never"}


def _named_by(value: object, user: dict[str, Any]) -> dict[str, Any]:
    """A kubeconfig whose context and only user are named by the YAML scalar ``value`` (not a string)."""
    doc = copy.deepcopy(GOOD)
    doc["users"] = [{"name": value, "user": user}]
    doc["contexts"][0]["context"]["user"] = value
    return doc


@pytest.mark.parametrize("value", [1, True], ids=["int", "bool"])
@pytest.mark.parametrize("kind", ["exec", "auth-provider", "basic-auth"])
def test_a_user_named_by_a_non_string_is_refused_and_nothing_runs(tmp_path: Path, value: object, kind: str) -> None:
    marker = tmp_path / "ran"
    user = {"exec": {"exec": _exec(marker)},
            "auth-provider": {"auth-provider": {"name": "oidc", "config": {"id-token": "a.b.c", "idp-issuer-url": "x"}}},
            "basic-auth": {"username": "admin", "password": "secret"}}[kind]
    active, reason, message = connect(_dump(_named_by(value, user)))
    assert not marker.exists()  # the exec plugin did not run
    assert (active, reason) == (False, "BadKubeConfig")
    assert "users[0].name: Input should be a valid string" in message


def test_a_cluster_named_by_an_integer_is_refused_and_never_falls_back_to_the_first() -> None:
    doc = copy.deepcopy(GOOD)
    doc["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    doc["clusters"].append({"name": 1, "cluster": {"server": "https://bad_host:6443"}})
    doc["contexts"][0]["context"]["cluster"] = 1
    active, reason, message = connect(_dump(doc))
    assert (active, reason) == (False, "BadKubeConfig")
    assert "clusters[1].name: Input should be a valid string" in message


def test_a_reference_that_names_nothing_is_an_error() -> None:
    doc = copy.deepcopy(GOOD)
    doc["contexts"][0]["context"]["cluster"] = "missing"
    assert connect(_dump(doc)) == (False, "BadKubeConfig", "load client config failed: invalid kubeconfig: "
                                   "context w names cluster missing, which the kubeconfig does not have")
    doc = copy.deepcopy(GOOD)
    doc["current-context"] = "other"
    assert "current-context other names no context" in connect(_dump(doc))[2]


def test_a_user_or_cluster_outside_the_current_context_is_checked_too(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    doc = copy.deepcopy(GOOD)
    doc["users"].append({"name": "evil", "user": {"exec": _exec(marker)}})
    assert connect(_dump(doc)) == (False, "InsecureKubeConfig",
                                   "load client config failed: exec plugins are not allowed for user evil")
    doc = copy.deepcopy(GOOD)
    doc["clusters"].append({"name": "other", "cluster": {"server": "https://bad_host:6443"}})
    assert connect(_dump(doc)) == (False, "InsecureKubeConfig",
                                   "load client config failed: untrusted server endpoint for cluster other")
    assert not marker.exists()


def test_duplicate_names_are_an_error() -> None:
    doc = copy.deepcopy(GOOD)
    doc["users"].append({"name": "u", "user": {"token": "abc"}})
    assert connect(_dump(doc)) == (False, "BadKubeConfig", "load client config failed: invalid kubeconfig: "
                                   "duplicate user name u")


def _nested(depth: int) -> bytes:
    return b"current-context: w\nusers: " + b"[" * depth + b"]" * depth + b"\n"


def _alias_bomb() -> bytes:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    return ("\n".join(lines) + "\ncurrent-context: w\nusers: *i\n").encode()


@pytest.mark.parametrize(("data", "why"), [
    (b"current-context: w\nusers: 1\n", "invalid kubeconfig: users: Input should be a valid list"),
    (b"users: {a: 1}\ncurrent-context: w\n", "invalid kubeconfig: users: Input should be a valid list"),
    (b"clusters: [1]\ncurrent-context: w\n", "invalid kubeconfig: clusters[0]: Input should be a valid dictionary"),
    (_nested(500), "failed to parse kubeconfig: nested deeper than 32 levels"),
    (b'{"current-context": "w", "users": ' + b"[" * 500 + b"]" * 500 + b"}", "nested deeper than 32 levels"),
    (_alias_bomb(), "failed to parse kubeconfig: more than 20000 nodes (aliases expanded)"),
    (b"current-context: w\ncomment: " + b"x" * (1 << 20) + b"\n", "failed to parse kubeconfig: larger than 256 KiB"),
    (b"a: 1\n---\nb: 2\n", "more than one document"),
    (b"a: &x 1\nb: *y\n", "an alias names no finished anchor"),
    (b"a: 1\na: 2\n", "duplicate mapping key at line 2, column 1"),
    (b'{"a": 1, "a": 2}', "duplicate key in a JSON object"),
    (b"base: &b {current-context: w}\n<<: *b\n", "merge keys are not supported"),
    (b"current-context: !!python/object/apply:os.system [touch /tmp/x]\n",
     "tags other than the standard ones are not supported at line 1, column 18"),
    (b"current-context: !!python/name:os.system x\n", "invalid YAML (ConstructorError) at line 1, column 18"),
    (b"a: 1" + b"9" * 5000 + b"\n", "unreadable scalar"),
    (b"- a list\n", "not a mapping"),
    (b"", "not a mapping"),
], ids=["users-1", "users-map", "cluster-1", "deep-yaml", "deep-json", "alias-bomb", "1MiB", "two-docs",
        "undefined-alias", "dup-yaml", "dup-json", "merge", "python-tag", "python-scalar", "huge-int", "list", "empty"])
def test_an_unreadable_document_is_a_clear_error_fast(data: bytes, why: str) -> None:
    started = time.monotonic()
    active, reason, message = connect(data)
    assert time.monotonic() - started < 1.0
    assert (active, reason) == (False, "BadKubeConfig")
    assert why in message
    assert isinstance(load_secret(_b64(data)), kc.KubeconfigError)  # never raises


def test_a_yaml_error_does_not_quote_the_document() -> None:
    data = b"current-context: w\nusers:\n- name: u\n  user:\n    token: s3cr3t-T0KEN: x\n"  # line 5 is bad
    message = connect(data)[2]
    assert message == ("load client config failed: failed to parse kubeconfig: invalid YAML (ScannerError) "
                       "at line 5, column 24")
    assert "s3cr3t" not in message
    assert "s3cr3t" not in str(_error(b"a: b\ntoken: 's3cr3t\n"))
    assert "s3cr3t" not in str(_error(b"a: !s3cr3t {}\n"))  # a tag's text
    assert "s3cr3t" not in str(_error(b"\x01s3cr3t"))  # a control character


def test_a_type_error_does_not_quote_the_value() -> None:
    message = str(_error(_with("users", "token", ["s3cr3t"])))
    assert message == "invalid kubeconfig: users[0].user.token: Input should be a valid string"


def test_a_secret_value_that_is_not_base64_is_a_clear_error() -> None:
    assert str(load_secret("not base64!")) == "failed to parse kubeconfig: the Secret's value is not base64"
    assert str(load_secret(7)) == "failed to parse kubeconfig: the Secret's value is not a string"


# --- the rules, one by one ---

def test_a_flattened_kubeconfig_is_accepted() -> None:
    assert kc.load(_dump(GOOD)).server == "https://127.0.0.1:6443"
    assert kc.load(_dump(_with("clusters", "server", "https://Worker-1.example.com:6443/"))).server == \
        "https://Worker-1.example.com:6443"
    assert kc.load(json.dumps(GOOD, indent="\t").encode()) == kc.load(_dump(GOOD))  # JSON, tabs and all


@pytest.mark.parametrize(("section", "key", "value", "why"), [
    ("users", "tokenFile", "/var/token", "tokenFile is not allowed"),
    ("clusters", "insecure-skip-tls-verify", True, "insecure TLS verification is not allowed for cluster w"),
    ("clusters", "certificate-authority", "/ca.crt", "certificate-authority file paths are not allowed"),
    ("clusters", "server", "", "server URL is required for cluster w"),
    ("clusters", "server", "https://bad_host:6443", "untrusted server endpoint"),
    ("clusters", "server", "https://[::1:6443", "untrusted server endpoint"),
    ("clusters", "server", "https://127.0.0.1:99999", "untrusted server endpoint"),
    ("clusters", "server", "https://127.0.0.1:6443\n", "untrusted server endpoint for cluster w"),
    ("clusters", "server", "http://127.0.0.1:6443", "the server URL must be https for cluster w"),
    ("clusters", "server", "https://admin:pw@127.0.0.1:6443", "basic auth is not allowed for cluster w"),
    ("users", "username", "admin", "basic auth is not allowed"),
    ("users", "password", "pw", "basic auth is not allowed"),
    ("users", "exec", {"command": "get-token"}, "exec plugins are not allowed"),
    ("users", "exec", {}, "exec plugins are not allowed"),
    ("users", "auth-provider", {"name": "gcp"}, "auth providers are not allowed"),
    ("users", "client-certificate", "/admin.crt", "client-certificate and client-key file paths are not allowed"),
    ("users", "client-key", "/admin.key", "client-certificate and client-key file paths are not allowed"),
])
def test_refused(section: str, key: str, value: object, why: str) -> None:
    error = _error(_with(section, key, value))
    assert error.reason == "InsecureKubeConfig"
    assert why in str(error)


@pytest.mark.parametrize(("section", "key", "value", "why"), [
    ("clusters", "insecure-skip-tls-verify", "true", "insecure-skip-tls-verify: Input should be a valid boolean"),
    ("clusters", "server", 6443, "server: Input should be a valid string"),
    ("clusters", "certificate-authority-data", "not base64!", "certificate-authority-data of cluster w is not valid"),
    ("clusters", "certificate-authority-data", _b64("no PEM"), "holds no PEM certificate"),
    ("clusters", "tls-server-name", "bad_name", "tls-server-name of cluster w is not an IP or a DNS name"),
    ("clusters", "proxy-url", "socks5://127.0.0.1:1080", "proxy-url of cluster w must be an http or https URL"),
    ("clusters", "proxy-url", "http://proxy:3128/\r\nX: y", "proxy-url of cluster w must be an http or https URL"),
    ("users", "client-key-data", None, "client-certificate-data and client-key-data go together"),
    ("users", "token", "two words", "the token of user u is not a bearer token"),
    ("users", "as", "someone", "impersonation (as, as-uid, as-groups, as-user-extra) is not supported"),
])
def test_malformed(section: str, key: str, value: object, why: str) -> None:
    error = _error(_with(section, key, value))
    assert error.reason == "BadKubeConfig"
    assert why in str(error)


def test_a_document_without_clusters() -> None:
    doc = copy.deepcopy(GOOD)
    doc["clusters"] = None
    assert str(_error(doc)) == "invalid kubeconfig: no cluster in the kubeconfig"


# --- the connection: from the checked fields alone ---

def test_the_configuration_of_a_flattened_kubeconfig() -> None:
    """The kubeconfig the end-to-end tests put in the Secrets gives exactly its server, CA, certificate
    and key, as private files, and nothing else."""
    config = kc.configuration(kc.load(flattened("https://127.0.0.1:41234").encode()))
    assert config.host == "https://127.0.0.1:41234"
    assert config.verify_ssl is True
    assert Path(config.ssl_ca_cert).read_text() == certs.pem(CA[0])
    assert Path(config.cert_file).read_text() == certs.pem(ADMIN[0])
    assert Path(config.key_file).read_bytes() == certs.key_pem(ADMIN[1])
    for path in (config.ssl_ca_cert, config.cert_file, config.key_file):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(config.key_file)).st_mode) == 0o700
    assert config.api_key == {}
    assert config.tls_server_name is None and config.proxy is None


def test_the_configuration_of_a_token_tls_server_name_and_proxy() -> None:
    doc = copy.deepcopy(GOOD)
    doc["users"][0]["user"] = {"token": "abc.def"}
    doc["clusters"][0]["cluster"].update({"tls-server-name": "worker.example.com",
                                          "proxy-url": "http://proxy.example.com:3128"})
    config = kc.configuration(kc.load(_dump(doc)))
    assert config.api_key == {"BearerToken": "Bearer abc.def"}
    assert config.cert_file is None and config.key_file is None
    assert config.tls_server_name == "worker.example.com"
    assert config.proxy == "http://proxy.example.com:3128"


@pytest.fixture
def worker_server() -> Iterator[tuple[str, list[str]]]:
    """A worker's API server on loopback: TLS with a certificate of ``CA`` for 127.0.0.1, asking for a
    client certificate of ``CA``; ``/version`` answers, noting the client's common name."""
    seen: list[str] = []
    loop = asyncio.new_event_loop()
    directory = Path(kc._temp_dir())
    cert_path, key_path = directory / "serving.crt", directory / "serving.key"
    cert_path.write_text(certs.pem(SERVING[0]))
    key_path.write_bytes(certs.key_pem(SERVING[1]))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=certs.pem(CA[0]))
    context.load_cert_chain(cert_path, key_path)
    context.verify_mode = ssl.CERT_REQUIRED

    async def version(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("ssl_object").getpeercert()  # type: ignore[union-attr]
        seen.append(dict(pair[0] for pair in peer["subject"])[NameOID.COMMON_NAME._name])
        return web.json_response({"major": "1", "minor": "33"})

    app = web.Application()
    app.router.add_get("/version", version)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{port}", seen
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_one_bad_secret_leaves_the_other_clusters_connected(worker_server: tuple[str, list[str]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Reconciled in one pass: the broken ones first, then a flattened kubeconfig reaching a live
    worker over TLS with its client certificate; only the broken clusters are inactive, and an
    unchanged Secret is not read again on the next probe."""
    server, seen = worker_server
    monkeypatch.setattr(Workers, "_watch", lambda self, worker: None)
    secrets = {"users-1": b"current-context: w\nusers: 1\n", "deep": _nested(500), "bomb": _alias_bomb(),
               "good": flattened(server).encode()}
    clusters = {name: _cluster(name, name) for name in ("users-1", "deep", "missing", "bomb", "good")}
    workers = _workers(secrets, clusters)
    reads: list[threading.Thread] = []
    monkeypatch.setattr("pykueue.controller.multikueue.clusters.load_secret",
                        lambda encoded: reads.append(threading.current_thread()) or load_secret(encoded))

    async def run() -> None:
        try:
            await workers.sync_all()
            await workers.sync_all()
        finally:
            for worker in workers.workers.values():
                await worker.close()

    asyncio.run(run())
    conditions = {body["metadata"]["name"]: body["status"]["conditions"][0]
                  for body in workers.kube.applied}  # type: ignore[attr-defined]
    assert {name: (c["status"], c["reason"]) for name, c in conditions.items()} == {
        "users-1": ("False", "BadKubeConfig"), "deep": ("False", "BadKubeConfig"),
        "missing": ("False", "BadKubeConfig"), "bomb": ("False", "BadKubeConfig"), "good": ("True", "Active")}
    assert conditions["missing"]["message"] == 'load client config failed: secrets "missing" not found'
    assert workers.workers["good"].lost_since is None
    assert seen == ["pykueue-admin", "pykueue-admin"]  # probed twice, with the client certificate
    assert len(reads) == 4  # each Secret read once in two passes, off the event loop's thread
    assert threading.main_thread() not in reads


def test_a_rotated_secret_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    workers = _workers({"s": b"current-context: w\nusers: 1\n"})
    worker = Worker("w")
    reads: list[str] = []
    monkeypatch.setattr("pykueue.controller.multikueue.clusters.load_secret",
                        lambda encoded: reads.append(encoded) or load_secret(encoded))

    async def run() -> list[tuple[bool, str, str]]:
        out = [await workers._connect(worker, _cluster("w", "s")) for _ in range(3)]
        workers.kube.secrets["s"] = b"current-context: w\n"  # type: ignore[attr-defined]
        out.append(await workers._connect(worker, _cluster("w", "s")))
        return out

    results = asyncio.run(run())
    assert len(reads) == 2
    assert [message.split(": ", 2)[-1] for _, _, message in results] == [
        "users: Input should be a valid list"] * 3 + ["no cluster in the kubeconfig"]


# --- the Secret's name: a DNS-1123 subdomain, checked before any request ---

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character (e.g. 'example.com')")


@pytest.mark.parametrize(("location", "why"), [
    ("../x", f'"../x" is not a valid Secret name: {SUBDOMAIN}'),
    ("%2e%2e", f'"%2e%2e" is not a valid Secret name: {SUBDOMAIN}'),
    ("a?b", f'"a?b" is not a valid Secret name: {SUBDOMAIN}'),
    ("a/b", f'"a/b" is not a valid Secret name: {SUBDOMAIN}'),
    ("s#x", f'"s#x" is not a valid Secret name: {SUBDOMAIN}'),
    ("..", f'".." is not a valid Secret name: {SUBDOMAIN}'),
    ("", f'"" is not a valid Secret name: {SUBDOMAIN}'),
    ("S", f'"S" is not a valid Secret name: {SUBDOMAIN}'),
    ("s" * 254, f'"{"s" * 77}..." is not a valid Secret name: must be no more than 253 characters'),
    (1, "1 is not a valid Secret name: it must be a string"),
    (True, "true is not a valid Secret name: it must be a string"),
    (None, "null is not a valid Secret name: it must be a string"),
    (["s"], "a list is not a valid Secret name: it must be a string"),
], ids=["dot-dot-slash", "percent", "query", "slash", "fragment", "dot-dot", "empty", "upper", "too-long",
        "integer", "boolean", "null", "list"])
def test_a_location_that_is_no_secret_name_is_refused_before_any_request(location: object, why: str) -> None:
    """Each of these would have gone into ``/api/v1/namespaces/NS/secrets/NAME`` as it is (``1`` as
    the name "1"): now the cluster is inactive with the field named, and nothing was asked of the API
    server. A Secret named "s" exists, so a request that got through could have found something."""
    workers = _workers({"s": flattened().encode(), "1": flattened().encode()})
    worker = Worker("w")
    cluster = _cluster("w", "s")
    cluster["spec"]["clusterSource"]["kubeConfig"]["location"] = location

    async def run() -> tuple[bool, str, str]:
        try:
            return await workers._connect(worker, cluster)
        finally:
            await worker.close()

    assert asyncio.run(run()) == (
        False, "BadKubeConfig", f"load client config failed: spec.clusterSource.kubeConfig.location: {why}")
    assert workers.kube.requested == []  # type: ignore[attr-defined]


def test_a_missing_location_is_refused_as_an_empty_name() -> None:
    workers = _workers({"s": flattened().encode()})
    cluster = _cluster("w", "s")
    del cluster["spec"]["clusterSource"]["kubeConfig"]["location"]
    status, reason, message = asyncio.run(workers._connect(Worker("w"), cluster))
    assert (status, reason) == (False, "BadKubeConfig")
    assert message == f'load client config failed: spec.clusterSource.kubeConfig.location: "" is not a valid Secret name: {SUBDOMAIN}'
    assert workers.kube.requested == []  # type: ignore[attr-defined]


def test_a_dotted_secret_name_is_still_read() -> None:
    """A subdomain with dots is a valid Secret name: it is asked for, as it is."""
    workers = _workers({})
    status, reason, message = asyncio.run(workers._connect(Worker("w"), _cluster("w", "worker-1.kubeconfig")))
    assert (status, reason, message) == (
        False, "BadKubeConfig", 'load client config failed: secrets "worker-1.kubeconfig" not found')
    assert workers.kube.requested == ["worker-1.kubeconfig"]  # type: ignore[attr-defined]


# --- locationType: Path, the kubeconfig a file on the controller's file system (a mounted volume) ---


def _path_cluster(location: object) -> dict[str, Any]:
    cluster = _cluster("w", "unused")
    cluster["spec"]["clusterSource"]["kubeConfig"] = {"locationType": "Path", "location": location}
    return cluster


def _connect_path(location: object, workers: Workers | None = None) -> tuple[bool, str, str]:
    workers = workers or _workers({})
    worker = Worker("w")

    async def run() -> tuple[bool, str, str]:
        try:
            return await workers._connect(worker, _path_cluster(location))
        finally:
            await worker.close()

    return asyncio.run(run())


def test_a_path_kubeconfig_is_read_from_the_file_and_checked_as_a_secrets(worker_server: tuple[str, list[str]],
                                                                       tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream reads ``locationType: Path`` from the controller's file system: the file's kubeconfig
    connects like a Secret's (the live worker over TLS, its client certificate) and no Secret is asked
    for; a file with an exec plugin is refused as one in a Secret is, and its command never runs."""
    server, seen = worker_server
    monkeypatch.setattr(Workers, "_watch", lambda self, worker: None)
    good = tmp_path / "worker.kubeconfig"
    good.write_text(flattened(server))
    workers = _workers({})
    assert _connect_path(str(good), workers) == (True, "Active", "Connected")
    assert seen == ["pykueue-admin"] and workers.kube.requested == []  # type: ignore[attr-defined]
    marker = tmp_path / "ran"
    doc = copy.deepcopy(GOOD)
    doc["users"][0]["user"] = {"exec": _exec(marker)}
    bad = tmp_path / "exec.kubeconfig"
    bad.write_text(_dump(doc).decode())
    active, reason, _ = _connect_path(str(bad))
    assert (active, reason) == (False, "InsecureKubeConfig") and not marker.exists()


@pytest.mark.parametrize(("make", "why"), [
    (lambda d: "relative/kubeconfig", "spec.clusterSource.kubeConfig.location: a Path location is an absolute file path"),
    (lambda d: 7, "spec.clusterSource.kubeConfig.location: a Path location is an absolute file path"),
    (lambda d: str(d / "missing"), "open {d}/missing: No such file or directory"),
    (lambda d: str(d), "{d}: not a regular file"),
    (lambda d: "/dev/zero", "/dev/zero: not a regular file"),
], ids=["relative", "integer", "missing", "directory", "device"])
def test_a_path_that_is_no_readable_file_is_a_clear_error(tmp_path: Path, make, why: str) -> None:
    """Each refused before anything is parsed; a device (endless) or a FIFO (it would block the read)
    is never read."""
    assert _connect_path(make(tmp_path)) == (False, "BadKubeConfig",
                                             "load client config failed: " + why.format(d=tmp_path))


def test_a_path_file_too_large_is_refused_by_the_bound(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"#" * (2 * 1024 * 1024))
    assert _connect_path(str(big)) == (False, "BadKubeConfig",
                                       "load client config failed: failed to parse kubeconfig: larger than 256 KiB")
