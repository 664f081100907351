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
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from pykueue.devcluster import pki
from pykueue.devcluster.archived import Archived

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
