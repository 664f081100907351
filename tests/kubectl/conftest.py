"""The tier 1 cluster with Kueue's CRDs, and running a verb in-process as a user would from a shell.

No controller runs on tier 1: tests write the statuses (quota reserved, admitted, counts) themselves
with ``kubectl patch --subresource=status``, as Kueue would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from pykueue.cli import main
from pykueue.devcluster.cluster import DevCluster
from pykueue.manifests import crds


def install_crds(cluster: DevCluster) -> None:
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=pykueue-crds", "-f", "-",
                    input=crds.to_yaml(crds.crds()))
    cluster.wait_for("Established", "crd", "--all", timeout=60)


@pytest.fixture(scope="session")
def kueue_cluster(control_plane: DevCluster) -> Iterator[DevCluster]:
    """The session's control plane with the generated CRDs established (idempotent: other modules
    apply the same ones)."""
    install_crds(control_plane)
    yield control_plane


def apply(cluster: DevCluster, *docs: dict[str, Any]) -> None:
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=yaml.safe_dump_all(docs))


def patch_status(cluster: DevCluster, kind: str, name: str, status: dict[str, Any], namespace: str | None = None) -> None:
    where = ["-n", namespace] if namespace else []
    cluster.kubectl("patch", kind, name, *where, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))


def get(cluster: DevCluster, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    where = ["-n", namespace] if namespace else []
    return json.loads(cluster.kubectl("get", kind, name, *where, "-o", "json").stdout)


@dataclass
class Result:
    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Result:
    """``pykueue ARGV...`` in-process: its exit status, stdout and stderr (argparse's exits included)."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return Result(code, out, err)


def verb(cluster: DevCluster, capsys: pytest.CaptureFixture[str], *argv: str) -> Result:
    """A verb against ``cluster`` (its kubeconfig given with --kubeconfig)."""
    return run(capsys, *argv, "--kubeconfig", str(cluster.kubeconfig))


def headers(out: str, first_header: str = "NAME") -> list[str]:
    """The headers of the table in ``out`` (two spaces or more apart; one is inside a header)."""
    line = next(line for line in out.splitlines() if line.startswith(first_header))
    return re.split(r" {2,}", line.strip())


def rows(out: str, first_header: str = "NAME") -> list[dict[str, str]]:
    """A kubectl-like table (left-aligned columns) as dicts by header: each cell is the text under its
    header, up to where the next header starts. Lines before the header line are skipped."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    header = lines[start]
    names: list[str] = []
    starts: list[int] = []
    i = 0
    while i < len(header):  # headers are separated by 2+ spaces; one space is inside a header
        while i < len(header) and header[i] == " ":
            i += 1
        if i >= len(header):
            break
        j = i
        while j < len(header) and header[j:j + 2] != "  ":
            j += 1
        names.append(header[i:j])
        starts.append(i)
        i = j
    out_rows = []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith(" "):
            continue  # a detail line under a row (every table here has its first column filled)
        cells = [line[s:(starts[k + 1] if k + 1 < len(starts) else None)].strip() for k, s in enumerate(starts)]
        out_rows.append(dict(zip(names, cells, strict=True)))
    return out_rows
