"""Tier 1 is the real thing: the pinned API server, RBAC, CRD schemas and admission webhooks."""

from __future__ import annotations

import base64
import concurrent.futures
import json
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from pykueue.devcluster import binaries, pki
from pykueue.devcluster.cluster import ClusterError, DevCluster, free_port

pytestmark = pytest.mark.cluster


def _crd(kind: str, properties: str) -> str:
    """A namespaced test CRD of one served version whose top-level properties are `properties`."""
    plural = kind.lower() + "s"
    head = f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.test.pykueue.dev}}
spec:
  group: test.pykueue.dev
  scope: Namespaced
  names: {{plural: {plural}, singular: {kind.lower()}, kind: {kind}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
"""
    return head + "".join(f"          {line}\n" for line in properties.strip("\n").splitlines())


WIDGET_CRD = _crd("Widget", """
spec:
  type: object
  required: [size]
  properties:
    size: {type: integer, minimum: 1}
""")


def test_server_reports_the_pinned_version(control_plane: DevCluster) -> None:
    out = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"] == binaries.versions()["kubernetes"]
    assert out["clientVersion"]["gitVersion"] == binaries.versions()["kubernetes"]


def test_rbac_is_enforced(control_plane: DevCluster) -> None:
    assert control_plane.kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    denied = control_plane.kubectl("get", "pods", "-A", "--as=jane", check=False)
    assert denied.returncode != 0
    assert 'User "jane" cannot list resource "pods"' in denied.stderr


def test_crd_is_served_and_its_schema_enforced(control_plane: DevCluster) -> None:
    control_plane.kubectl("apply", "-f", "-", input=WIDGET_CRD)
    control_plane.wait_for("Established", "crd/widgets.test.pykueue.dev", timeout=30)
    good = "apiVersion: test.pykueue.dev/v1\nkind: Widget\nmetadata: {name: ok, namespace: default}\nspec: {size: 3}\n"
    control_plane.kubectl("apply", "-f", "-", input=good)
    got = json.loads(control_plane.kubectl("get", "widget", "ok", "-o", "json").stdout)
    assert got["spec"] == {"size": 3}
    bad = good.replace("name: ok", "name: bad").replace("size: 3", "size: 0")
    refused = control_plane.kubectl("apply", "-f", "-", input=bad, check=False)
    assert refused.returncode != 0
    assert "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1" in refused.stderr
    assert control_plane.kubectl("get", "widget", "bad", check=False).returncode != 0


GADGET_CRD = _crd("Gadget", "status: {type: object, x-kubernetes-preserve-unknown-fields: true}")
GADGET = "apiVersion: test.pykueue.dev/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\n"


def test_wait_for_outlasts_an_object_whose_conditions_are_not_written_yet(control_plane: DevCluster) -> None:
    """A just-created CRD can hold ``status.conditions: null`` for a moment, and plain `kubectl wait`
    gives up on it at once (the Ray addon's start failed so in CI); `wait_for` waits on. The API
    server drops nulls from custom resources, so the not-yet-readable conditions here are a string,
    which kubectl's accessor refuses the same way."""
    control_plane.kubectl("apply", "-f", "-", input=GADGET_CRD)
    control_plane.wait_for("Established", "crd/gadgets.test.pykueue.dev", timeout=30)
    control_plane.kubectl("apply", "-f", "-", input=GADGET + "status: {conditions: pending}\n")
    plain = control_plane.kubectl("wait", "--for=condition=Ready", "gadget/g", "--timeout=60s", check=False)
    assert plain.returncode != 0 and "accessor error" in plain.stderr
    with pytest.raises(ClusterError, match="accessor error"):
        control_plane.wait_for("Ready", "gadget/g", timeout=2)  # still no conditions at the deadline
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(control_plane.wait_for, "Ready", "gadget/g", timeout=120)
        control_plane.kubectl("apply", "-f", "-",
                              input=GADGET + "status: {conditions: [{type: Ready, status: 'True'}]}\n")
        assert waiting.result(timeout=150) is None  # raises what wait_for raised


class _Deny(BaseHTTPRequestHandler):
    """An admission webhook that refuses every object it is sent, naming it."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        body = json.dumps({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["uid"],
                "allowed": False,
                "status": {"code": 403, "message": f"test webhook refuses {request['name']}"},
            },
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def deny_webhook(control_plane: DevCluster, tmp_path: Path) -> Iterator[None]:
    """A validating webhook served over TLS on loopback, for ConfigMaps labelled `deny: "yes"`."""
    ca_pair, ca_cert, ca_key = pki.make_ca(tmp_path, "webhook-ca", "webhook-ca")
    serving = pki.make_leaf(tmp_path, "webhook", ca_cert, ca_key, "webhook", server_names=("127.0.0.1",))
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), _Deny)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(serving.cert), str(serving.key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()


    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "pykueue-test-deny"},
        "webhooks": [{
            "name": "deny.test.pykueue.dev",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "objectSelector": {"matchLabels": {"deny": "yes"}},
            "clientConfig": {
                "url": f"https://127.0.0.1:{port}/validate",
                "caBundle": base64.b64encode(ca_pair.cert.read_bytes()).decode(),
            },
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["configmaps"]}],
        }],
    }
    control_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(config))
    try:
        yield
    finally:
        control_plane.kubectl("delete", "validatingwebhookconfiguration", "pykueue-test-deny", check=False)
        server.shutdown()


def test_admission_webhooks_are_called(control_plane: DevCluster, deny_webhook: None) -> None:
    refused = control_plane.kubectl(
        "create", "configmap", "refused", "-n", "default", "--dry-run=client", "-o", "yaml", check=True
    ).stdout
    labelled = yaml.safe_load(refused)
    labelled["metadata"]["labels"] = {"deny": "yes"}
    result = control_plane.kubectl("create", "-f", "-", input=yaml.safe_dump(labelled), check=False)
    assert result.returncode != 0
    assert "test webhook refuses refused" in result.stderr
    control_plane.kubectl("create", "configmap", "allowed", "-n", "default")  # no label: not sent


def test_cli_up_env_down(tmp_path: Path) -> None:
    """`pykueue dev-cluster` starts a cluster that outlives the command and stops all of it."""



    directory = tmp_path / "cli-cluster"
    pykueue = [sys.executable, "-m", "pykueue.cli", "dev-cluster"]
    up = subprocess.run([*pykueue, "up", "--dir", str(directory)], capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == str(directory / "kubeconfig")
    state = DevCluster.load(directory)
    try:
        assert {p.name for p in state.processes} == {"etcd", "kube-apiserver"}
        assert all(p.alive() for p in state.processes)
        env = subprocess.run([*pykueue, "env", "--dir", str(directory)], capture_output=True, text=True)
        assert env.returncode == 0
        lines = env.stdout.splitlines()
        assert lines[0] == f"export KUBECONFIG={directory / 'kubeconfig'}"
        shell = subprocess.run(["bash", "-c", env.stdout + "kubectl get namespace default -o name"],
                               capture_output=True, text=True, timeout=60)
        assert shell.stdout.strip() == "namespace/default", shell.stderr
    finally:
        down = subprocess.run([*pykueue, "down", "--dir", str(directory)], capture_output=True, text=True)
    assert down.returncode == 0
    assert down.stdout.strip() == "stopped kube-apiserver, etcd"
    assert not any(p.alive() for p in state.processes)
    again = subprocess.run([*pykueue, "down", "--dir", str(directory)], capture_output=True, text=True)
    assert again.returncode == 2
    assert again.stderr.startswith("pykueue: error: no cluster was started in")
