"""Controllers the tier-2 cluster's ``jobset``, ``lws`` and ``kubeflow`` addons run, built from source archives.

JobSet's, LeaderWorkerSet's and the Kubeflow training-operator's Go modules are not served by the module proxy these machines reach, so
their release tags are kept as ``git archive`` tarballs beside the clone (``../shared/third_party/``,
or ``$PYKUEUE_THIRD_PARTY``); every module they import is an ordinary one the proxy serves. Each
manager is built from its extracted tree into a cache directory named for the archive's hash
(``<addon>-<tag>-<sha256[:16]>/``), next to its CRDs and its webhook manifests (the archive's
``config/.../webhook`` with its kustomize patches applied), so a second start, another clone and CI
reuse the build. ``pykueue.devcluster.addon_webhooks`` starts a built manager against a cluster.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pykueue.devcluster.binaries import REPO_ROOT, BuildError, _go, cache_root, report


@dataclass(frozen=True, slots=True)
class Archived:
    """One controller kept as a source archive: what to build from it and what to copy out."""

    addon: str  # the dev cluster's addon name
    archive: str  # file name in the third-party directory
    binary: str
    package: str  # what `go build` builds, relative to the tree
    crd_dir: str  # the CRDs, relative to the tree
    crd_names: tuple[str, ...]
    webhook_dir: str  # manifests.yaml and kustomize patches, relative to the tree
    config_api: str | None  # apiVersion of the manager's Configuration; None: it takes flags only
    crd_exclude: tuple[str, ...] = ()  # CRD files of crd_dir not installed

    @property
    def tag(self) -> str:
        return self.archive.removesuffix(".tar.gz").rsplit("-", 1)[-1]


JOBSET = Archived(
    addon="jobset", archive="jobset-v0.12.0.tar.gz", binary="jobset-manager", package="./main.go",
    crd_dir="config/components/crd/bases", crd_names=("jobsets.jobset.x-k8s.io",),
    webhook_dir="config/components/webhook", config_api="config.jobset.x-k8s.io/v1alpha1",
)
LWS = Archived(
    addon="lws", archive="lws-v0.8.0.tar.gz", binary="lws-manager", package="./cmd/main.go",
    crd_dir="config/crd/bases", crd_names=("leaderworkersets.leaderworkerset.x-k8s.io",),
    webhook_dir="config/webhook", config_api="config.lws.x-k8s.io/v1alpha1",
)
# The training-operator v1 line (upstream Kueue's pkg/controller/jobs/kubeflow integrations build
# against it): PyTorchJob, TFJob, XGBoostJob, PaddleJob and JAXJob. Its own MPIJob v1 CRD is left out:
# ``kubeflow.org/mpijob`` is the MPI Operator's v2beta1 MPIJob, and both CRDs are named
# ``mpijobs.kubeflow.org``. It has no Configuration file: ``cluster.DevCluster.start_archived`` passes flags.
KUBEFLOW = Archived(
    addon="kubeflow", archive="training-operator-v1.9.3.tar.gz", binary="training-operator",
    package="./cmd/training-operator.v1", crd_dir="manifests/base/crds",
    crd_names=tuple(f"{k}.kubeflow.org" for k in ("pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs")),
    webhook_dir="manifests/base/webhook", config_api=None, crd_exclude=("kubeflow.org_mpijobs.yaml",),
)
BY_ADDON = {a.addon: a for a in (JOBSET, LWS, KUBEFLOW)}
WEBHOOKS_FILE = "webhooks.yaml"


def third_party_dir() -> Path:
    """$PYKUEUE_THIRD_PARTY, else ``shared/third_party`` beside the clone."""
    if explicit := os.environ.get("PYKUEUE_THIRD_PARTY"):
        return Path(explicit)
    return REPO_ROOT.parent / "shared" / "third_party"


def archive_path(spec: Archived) -> Path:
    path = third_party_dir() / spec.archive
    if not path.is_file():
        raise BuildError(f"the {spec.addon} addon builds from {path}, which is missing "
                         "(set PYKUEUE_THIRD_PARTY to the directory holding it)")
    return path


def archive_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def home(spec: Archived) -> Path:
    """``<addon>-<tag>-<hash>/`` in the cache: ``bin/<binary>``, ``crds/`` and ``webhooks.yaml``."""
    return cache_root() / f"{spec.addon}-{spec.tag}-{archive_hash(archive_path(spec))}"


def missing(spec: Archived, directory: Path) -> list[str]:
    out = [] if os.access(directory / "bin" / spec.binary, os.X_OK) else [spec.binary]
    if not any((directory / "crds").glob("*.yaml")):
        out.append("crds/")
    return out + ([] if (directory / WEBHOOKS_FILE).is_file() else [WEBHOOKS_FILE])


def ensure(spec: Archived, log=sys.stderr) -> Path:
    """The addon's directory, building it first when something is missing (under a lock, so that
    concurrent callers build once)."""
    target = home(spec)
    if not missing(spec, target):
        return target
    go = _go()
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if missing(spec, target):  # another caller may have built it while we waited
            _build(go, spec, target, log)
    return target


def _build(go: str, spec: Archived, target: Path, log) -> None:
    logfile = target / "build.log"
    logfile.write_text("")
    print(f"pykueue: building {spec.binary} ({spec.archive}) into {target}", file=log, flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=target, prefix=".build-") as tmp:
        tree = Path(tmp) / "src"
        with tarfile.open(archive_path(spec)) as tar:
            tar.extractall(tree, filter="data")
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
        cmd = [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", f"{tmp}/{spec.binary}", spec.package]
        with open(logfile, "a") as out:
            result = subprocess.run(cmd, cwd=tree, env=env, stdout=out, stderr=out)
        if result.returncode != 0:
            tail = logfile.read_text().strip().splitlines()[-3:]
            raise BuildError(f"go build of {spec.archive} failed (exit {result.returncode}); full log in "
                             f"{logfile}: {' | '.join(tail)}")
        crds = target / "crds"
        crds.mkdir(exist_ok=True)
        for crd in sorted((tree / spec.crd_dir).glob("*.yaml")):
            if crd.name not in spec.crd_exclude and _is_crd(crd):  # not the directory's kustomization.yaml
                shutil.copyfile(crd, crds / crd.name)
        (target / WEBHOOKS_FILE).write_text(yaml.safe_dump_all(webhook_manifests(tree / spec.webhook_dir),
                                                                 sort_keys=False))
        (target / "bin").mkdir(exist_ok=True)
        os.replace(Path(tmp) / spec.binary, target / "bin" / spec.binary)
    print(f"pykueue: built {spec.binary} in {time.monotonic() - started:.0f} s", file=log, flush=True)


def _is_crd(path: Path) -> bool:
    return any((d or {}).get("kind") == "CustomResourceDefinition" for d in yaml.safe_load_all(path.read_text()))


def webhook_manifests(directory: Path) -> list[dict[str, Any]]:
    """The webhook configurations of ``manifests.yaml`` with the kustomization's JSON patches applied
    (JobSet's and LWS's add the pod webhooks' objectSelector: without it every Pod in the cluster would
    be sent to the addon's webhook). A patch targets one configuration by name, or every configuration
    of a kind (the training-operator's, which renames its one ValidatingWebhookConfiguration)."""
    docs = [d for d in yaml.safe_load_all((directory / "manifests.yaml").read_text()) if d]
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text()) or {}
    for patch in kustomization.get("patches") or []:
        target = patch.get("target") or {}
        chosen = [d for d in docs if target.get("name", d["metadata"]["name"]) == d["metadata"]["name"]
                  and target.get("kind", d.get("kind")) == d.get("kind")]
        if not chosen:
            raise BuildError(f"{directory}/kustomization.yaml: a patch targets {target!r}, which manifests.yaml lacks")
        for op in yaml.safe_load((directory / patch["path"]).read_text()) or []:
            for doc in chosen:
                _apply_op(doc, op, directory / patch["path"])
    return docs


def _apply_op(doc: dict[str, Any], op: dict[str, Any], source: Path) -> None:
    """One JSON-patch operation (``replace`` or ``add``, all the webhook patches use)."""
    *parents, last = [p for p in str(op.get("path", "")).split("/") if p]
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if op.get("op") not in ("replace", "add"):
        raise BuildError(f"{source}: unsupported patch operation {op.get('op')!r}")
    if isinstance(node, list):
        if last == "-":
            node.append(op["value"])
        elif op["op"] == "add":
            node.insert(int(last), op["value"])
        else:
            node[int(last)] = op["value"]
    else:
        node[last] = op["value"]


def main(argv: list[str] | None = None) -> int:
    """`python -m pykueue.devcluster.archived [ADDON...]`: build or reuse each (default: all), print
    their directories."""
    names = (sys.argv[1:] if argv is None else argv) or list(BY_ADDON)
    unknown = [n for n in names if n not in BY_ADDON]
    if unknown:
        print(f"pykueue: error: unknown addon {', '.join(unknown)} (known: {', '.join(BY_ADDON)})", file=sys.stderr)
        return 2
    for name in names:
        if code := report(lambda name=name: ensure(BY_ADDON[name])):
            return code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
