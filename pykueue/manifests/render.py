"""Regenerate what is rendered for and from the Helm chart: its copy of the CRDs, its per-kind table
(`templates/_integrations.tpl`, from the integration registry: `chart_tables`) and `config/manifests.yaml`.

`config/manifests.yaml` is the release manifest a newcomer applies with one
`kubectl apply --server-side -f`: the chart rendered by the pinned helm with the Namespace and the CRDs.
Both files are committed; tests/packaging fails when either is stale. Run from a clone:

    python -m pykueue.manifests.render          # rewrite both
    python -m pykueue.manifests.render --check  # exit 1 and name the stale files
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from pykueue.devcluster import helm
from pykueue.devcluster.binaries import REPO_ROOT, BuildError
from pykueue.manifests import chart_tables

CHART = REPO_ROOT / "charts" / "pykueue"
GENERATED_CRDS = REPO_ROOT / "config" / "crd" / "kueue.x-k8s.io.yaml"
CHART_CRDS = CHART / "crds" / "kueue.x-k8s.io.yaml"
MANIFESTS = REPO_ROOT / "config" / "manifests.yaml"
CHART_TABLE = CHART / "templates" / "_integrations.tpl"
RELEASE = "pykueue"
NAMESPACE = "pykueue-system"
TEMPLATE_ARGS = ("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--include-crds",
                 "--set", "createNamespace=true")


def header(helm_version: str) -> str:
    return (
        "# pykueue's release manifest: the Namespace, Kueue's CRDs, the controller's ServiceAccount,\n"
        "# least-privilege RBAC, Configuration and Deployment. Install with\n"
        "#   kubectl apply --server-side -f config/manifests.yaml\n"
        f"# Rendered from charts/pykueue by helm {helm_version} (`helm {' '.join(TEMPLATE_ARGS[:2])} "
        f"charts/pykueue {' '.join(TEMPLATE_ARGS[3:])}`)\n"
        "# with `python -m pykueue.manifests.render`. Do not edit: change the chart and render again.\n"
    )


def render(helm_path: Path) -> str:
    """The manifests as the committed file holds them (needs the chart's CRDs up to date first)."""
    result = subprocess.run([str(helm_path), *TEMPLATE_ARGS], capture_output=True, text=True, cwd=REPO_ROOT)
    if result.returncode != 0:
        raise BuildError(f"helm template failed: {result.stderr.strip()}")
    return header(helm.version()) + result.stdout


def stale(helm_path: Path) -> list[Path]:
    """The rendered files whose committed text differs from a fresh render of the chart as it is
    (a stale CRD copy is reported as such, and renders into the manifests as it stands)."""
    found = [] if CHART_CRDS.exists() and CHART_CRDS.read_text() == GENERATED_CRDS.read_text() else [CHART_CRDS]
    if not CHART_TABLE.exists() or CHART_TABLE.read_text() != chart_tables.render():
        found.append(CHART_TABLE)
    if not MANIFESTS.exists() or MANIFESTS.read_text() != render(helm_path):
        found.append(MANIFESTS)
    return found


def write(helm_path: Path) -> list[Path]:
    """Bring the files up to date, the CRD copy and the table first (helm renders from disk); return those changed."""
    changed = []
    crds = GENERATED_CRDS.read_text()
    if not CHART_CRDS.exists() or CHART_CRDS.read_text() != crds:
        CHART_CRDS.parent.mkdir(parents=True, exist_ok=True)
        CHART_CRDS.write_text(crds)
        changed.append(CHART_CRDS)
    table = chart_tables.render()
    if not CHART_TABLE.exists() or CHART_TABLE.read_text() != table:
        CHART_TABLE.write_text(table)
        changed.append(CHART_TABLE)
    manifests = render(helm_path)
    if not MANIFESTS.exists() or MANIFESTS.read_text() != manifests:
        MANIFESTS.write_text(manifests)
        changed.append(MANIFESTS)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pykueue.manifests.render", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    try:
        helm_path = helm.ensure()
        if args.check:
            found = stale(helm_path)
            for path in found:
                print(f"{path.relative_to(REPO_ROOT)} is stale: run python -m pykueue.manifests.render",
                      file=sys.stderr)
            return 1 if found else 0
        for path in write(helm_path):
            print(f"wrote {path.relative_to(REPO_ROOT)}")
    except BuildError as exc:
        print(f"pykueue: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
