"""Upstream Kueue's manager (``cmd/kueue``) and CRDs, built from the Go module proxy, for the live bench.

``bench/cluster_perf.py --controller upstream`` runs upstream's Go controller against the same tier-1
control plane as ``pykueue controller``. It is built like KubeRay's operator (both by
``go_wrapped.py``): through a wrapper module, ``hack/k8s/kueue/`` (go.mod and go.sum committed), into ``kueue-<version>/`` in the
cache, with the CRDs the same module version carries in ``config/components/crd/bases`` copied next
to the binary. The proxy serves the release the wrapper pins (v0.17.0), not v0.18.6: callers print
``version()`` so no figure is taken for another release's.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from pykueue.devcluster import pki
from pykueue.devcluster.binaries import BuildError, report
from pykueue.devcluster.cluster import free_port
from pykueue.devcluster.go_wrapped import Wrapped

BUILD = Wrapped("kueue", "sigs.k8s.io/kueue", "sigs.k8s.io/kueue/cmd/kueue", "kueue", "upstream Kueue's manager",
                ("config", "components", "crd", "bases"))
BINARY = BUILD.binary
# with internal certificate management off, the manager reads its metrics server's pair from this fixed
# path (cmd/kueue/main.go) and exits when it is absent, even with metrics off
METRICS_CERTS = Path("/etc/kueue/metrics/certs")


def version() -> str:
    """The Kueue release hack/k8s/kueue/go.mod pins."""
    return BUILD.version()


def home() -> Path:
    """``kueue-<version>/`` in the cache: ``bin/kueue`` and ``crds/``."""
    return BUILD.home()


def crd_files(directory: Path | None = None) -> list[Path]:
    return sorted(((directory or home()) / "crds").glob("*.yaml"))


def missing(directory: Path | None = None) -> list[str]:
    return BUILD.missing(directory or home())


def ensure(log=sys.stderr) -> Path:
    """The build's directory, building the manager and copying the CRDs first when they are missing
    (under a lock, so concurrent callers build once)."""
    return BUILD.ensure(log)


def configuration(work: Path, health_port: int, webhook_port: int) -> dict:
    """A Configuration for a run against a bare control plane: no leader election, no metrics, internal
    certificate management off (it would write a Secret and patch webhook configurations the control
    plane does not have), only the batch/job integration (the others wait for CRDs that are absent),
    the webhook server on a loopback port with ``webhook_certificate``'s pair, and the visibility
    server off (as ``pykueue controller``'s is in the bench, ``--visibility-port=0``)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(work / "webhook-certs")},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 50, "burst": 100},  # upstream's default and its perf runner's
        "integrations": {"frameworks": ["batch/job"]},
        "featureGates": {"VisibilityOnDemand": False},
    }


def webhook_certificate(directory: Path) -> pki.Pair:
    """``tls.crt``/``tls.key`` for 127.0.0.1, signed by a CA of their own (the manager's webhook server
    will not start without a pair; nothing calls it, see ``manager_command``)."""
    directory.mkdir(parents=True, exist_ok=True)
    _, ca_cert, ca_key = pki.make_ca(directory, "ca", "pykueue-upstream-webhook-ca")
    return pki.make_leaf(directory, "tls", ca_cert, ca_key, "kueue-webhook", server_names=("127.0.0.1", "localhost"))


def metrics_certificate(pair: pki.Pair, directory: Path = METRICS_CERTS) -> None:
    """A pair where the manager looks for its metrics server's (metrics stay off: nothing serves it);
    one already there is left as it is."""
    if (directory / "tls.crt").is_file() and (directory / "tls.key").is_file():
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pair.cert, directory / "tls.crt")
        shutil.copyfile(pair.key, directory / "tls.key")
    except OSError as exc:
        raise BuildError(f"upstream Kueue's manager reads a metrics certificate from {directory}, which "
                         f"cannot be written here: {exc.strerror}") from None


def manager_command(kubeconfig: Path, work: Path) -> tuple[list[str], int]:
    """The command line that runs upstream's manager against ``kubeconfig``, and its health port.

    The webhook server runs (the manager requires it) but no webhook configuration points the API
    server at it: the bench's objects are complete and valid as created, and ``pykueue controller`` is
    run the same way (``--webhook-port=0``), so both controllers see the same requests."""
    work.mkdir(parents=True, exist_ok=True)
    pair = webhook_certificate(work / "webhook-certs")
    metrics_certificate(pair)
    health = free_port()
    config = work / "upstream-kueue.yaml"
    config.write_text(yaml.safe_dump(configuration(work, health, free_port()), sort_keys=False))
    binary = ensure() / "bin" / BINARY
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--config={config}"], health


def main() -> int:
    """`python -m pykueue.devcluster.upstream_kueue`: build or reuse, print the directory."""
    return report(ensure)


if __name__ == "__main__":
    raise SystemExit(main())
