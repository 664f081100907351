"""What a manager built from an archive (``pykueue.devcluster.archived``) needs to run outside the cluster.

In a cluster, JobSet's and LeaderWorkerSet's managers make their own webhook certificate (internal cert
management, a Secret and a Service in front of their pod) and their install registers the webhook
configurations for that Service. A manager run as a process on loopback has neither, and JobSet's
controller panics on objects its mutating webhook did not default. So, as pykueue registers its own
webhooks locally, each addon gets:

- a Configuration turning ``internalCertManagement`` off, with a certificate directory, a webhook port,
  probe and metrics addresses on loopback, and leader election off (its namespace still named);
- a serving certificate for ``127.0.0.1`` signed by the dev cluster's CA (``pki/ca.*``);
- its webhook configurations (the archive's, patched as its kustomization does) called at
  ``https://127.0.0.1:PORT/<path>`` with that CA as their bundle, named ``<addon>-<name>``.

The Kubeflow training-operator (``kubeflow``) takes flags, not a Configuration, and always runs
open-policy-agent's cert-controller rotator (its ``pkg/cert.ManageCerts``), whose readiness gates its
controllers and its ``/readyz``. Read from cert-controller v0.12.0's ``pkg/rotator/rotator.go``, the
rotator needs: the Secret ``training-operator-webhook-cert`` in ``$MY_POD_NAMESPACE`` (``kubeflow``) to
exist (it fills an empty one with its own CA and a certificate for ``training-operator.kubeflow.svc``,
and exits if it cannot get it); a file ``tls.crt`` in its certificate directory within about 17 minutes
of backoff (it only stats it: in a cluster the kubelet mounts the Secret there, the rotator never
writes files); and a CA injection pass, which counts as done even when the webhook configuration it
injects into (``validator.training-operator.kubeflow.org``) is missing. Its certificate directory is
the constant ``/tmp/k8s-webhook-server/serving-certs`` (also controller-runtime's default, which its
webhook server reads): one fixed, machine-wide path. So the addon writes there a serving certificate
for 127.0.0.1 signed by a CA kept once in pykueue's cache (``training-operator-webhook-pki/``), the
same files for every cluster on the machine, so two clusters at once do not break each other's
webhooks; its validating webhooks are registered at loopback with that CA, under the ``kubeflow-``
prefixed name, which the rotator does not look for (its CA, from the Secret, would not match the
served certificate).
"""

from __future__ import annotations

import base64
import copy
import datetime
import fcntl
import os
import tempfile
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykueue.devcluster import pki
from pykueue.devcluster.archived import Archived
from pykueue.devcluster.binaries import cache_root

LEADER_ELECTION_NAMESPACE = "default"
ADDON_LABEL = "pykueue.dev/addon"  # on the webhook configurations registered here: which addon's


def addon_selector(spec: Archived) -> str:
    """The label selector of the webhook configurations registered for ``spec``'s manager."""
    return f"{ADDON_LABEL}={spec.addon}"


def manager_config(spec: Archived, *, webhook_port: int, cert_dir: Path, probe_port: int,
                   metrics_port: int) -> dict[str, Any]:
    """The manager's ``--config`` document."""
    return {
        "apiVersion": spec.config_api,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False, "resourceNamespace": LEADER_ELECTION_NAMESPACE},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
    }


def serving_certificate(pki_dir: Path, cert_dir: Path) -> Path:
    """``tls.crt`` and ``tls.key`` for 127.0.0.1 in ``cert_dir``, signed by the cluster's CA; returns the
    CA certificate's path (the webhooks' bundle)."""
    ca_path = pki_dir / "ca.crt"
    ca_cert = x509.load_pem_x509_certificate(ca_path.read_bytes())
    ca_key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), password=None)
    cert_dir.mkdir(parents=True, exist_ok=True)
    pki.make_leaf(cert_dir, "tls", ca_cert, ca_key, "addon-webhook",  # type: ignore[arg-type]
                  server_names=("127.0.0.1", "localhost"))
    return ca_path


def webhook_configurations(spec: Archived, manifests: list[dict[str, Any]], port: int,
                           ca_pem: bytes) -> list[dict[str, Any]]:
    """The archive's webhook configurations, each webhook called at loopback ``port`` instead of its
    Service, trusting ``ca_pem``; names prefixed with the addon, as its release's kustomization does."""
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for doc in manifests:
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": f"{spec.addon}-{doc['metadata']['name']}",
                           "labels": {ADDON_LABEL: spec.addon}}
        for hook in doc.get("webhooks") or []:
            path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path", "/")
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
        out.append(doc)
    return out


# The training-operator's (``kubeflow`` addon's) fixed names, from its cmd/training-operator.v1/main.go
# and pkg/cert/cert.go.
TRAINING_OPERATOR_NAMESPACE = "kubeflow"  # $MY_POD_NAMESPACE's default
TRAINING_OPERATOR_SECRET = "training-operator-webhook-cert"
TRAINING_OPERATOR_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
TRAINING_OPERATOR_SCHEMES = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")  # not its mpijob
RENEW_BEFORE = datetime.timedelta(days=30)


def training_operator_args(kubeconfig: Path, *, webhook_port: int, probe_port: int, metrics_port: int) -> list[str]:
    """Its flags: the admin kubeconfig, loopback probe and metrics addresses (its webhook server takes
    only a port and listens on every interface), leader election off (its default) and only the five
    schemes whose CRDs the addon installs (``--enable-scheme`` empty would enable MPIJob v1 too)."""
    return [f"--kubeconfig={kubeconfig}", f"--metrics-bind-address=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{probe_port}", f"--webhook-server-port={webhook_port}",
            *(f"--enable-scheme={s}" for s in TRAINING_OPERATOR_SCHEMES)]


def training_operator_bootstrap() -> list[dict[str, Any]]:
    """The namespace and the empty Secret its cert rotator reads (and fills) before it gets ready."""
    ns = TRAINING_OPERATOR_NAMESPACE
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": {"name": TRAINING_OPERATOR_SECRET, "namespace": ns}}]


def shared_serving_certificate(cert_dir: Path = TRAINING_OPERATOR_CERT_DIR) -> Path:
    """The machine-wide serving certificate in ``cert_dir`` (``tls.crt``/``tls.key`` for 127.0.0.1),
    made once (renewed 30 days before it expires) in the cache's ``training-operator-webhook-pki/``
    under a lock and copied in when the files there differ; returns its CA certificate's path."""
    pki_dir = cache_root() / "training-operator-webhook-pki"
    pki_dir.mkdir(parents=True, exist_ok=True)
    with open(pki_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        leaf = pki_dir / "tls.crt"
        if not leaf.is_file() or _expires_soon(leaf):
            _, ca_cert, ca_key = pki.make_ca(pki_dir, "ca", "pykueue-training-operator-webhook-ca")
            pki.make_leaf(pki_dir, "tls", ca_cert, ca_key, "training-operator-webhook",
                          server_names=("127.0.0.1", "localhost"))
        cert_dir.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            content = (pki_dir / name).read_bytes()
            target = cert_dir / name
            if not target.is_file() or target.read_bytes() != content:
                fd, tmp = tempfile.mkstemp(dir=cert_dir, prefix=f".{name}.")
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
                os.replace(tmp, target)  # the webhook server's certwatcher reloads it
    return pki_dir / "ca.crt"


def _expires_soon(path: Path) -> bool:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) < RENEW_BEFORE
