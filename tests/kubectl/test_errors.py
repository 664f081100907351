"""Every way a verb can fail ends in one ``pykueue VERB: error: ...`` line on stderr and exit 1 (what
the cluster said or could not say), or the usage and exit 2 (a command-line mistake): no kubeconfig,
a wrong one, an API server that cannot be reached, Kueue's CRDs not installed, an object not found."""

from __future__ import annotations

import re

import pytest

from pykueue.devcluster.cluster import DevCluster, free_port
from tests.kubectl.conftest import Result, install_crds, run, verb

pytestmark = pytest.mark.cluster


def one_error(r: Result, command: str) -> str:
    """The single error line of a failed verb (exit 1), nothing on stdout."""
    assert r.code == 1, (r.code, r.out, r.err)
    assert r.out == ""
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"pykueue {command}: error: "), r.err
    return lines[0].removeprefix(f"pykueue {command}: error: ")


def test_no_kubeconfig(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    message = one_error(run(capsys, "get", "workloads"), "get")
    assert message == (f"no kubeconfig: {tmp_path}/.kube/config does not exist; pass --kubeconfig FILE or set "
                       "KUBECONFIG")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    assert one_error(run(capsys, "describe", "cq", "x"), "describe").startswith(
        f"no kubeconfig: $KUBECONFIG ({tmp_path}/nope) does not exist")
    assert one_error(run(capsys, "stop", "cq", "x", "--kubeconfig", str(tmp_path / "missing")), "stop") == (
        f"kubeconfig {tmp_path}/missing: no such file")


def test_a_kubeconfig_that_is_not_one(capsys, tmp_path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_text("clusters: [\n")
    assert one_error(run(capsys, "get", "cq", "--kubeconfig", str(garbage)), "get").startswith(
        f"kubeconfig {garbage}: cannot be read: ")
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    assert one_error(run(capsys, "get", "cq", "--kubeconfig", str(empty)), "get").startswith(f"kubeconfig {empty}: ")


def test_unknown_context(control_plane: DevCluster, capsys) -> None:
    r = verb(control_plane, capsys, "get", "cq", "--context", "nope")
    assert one_error(r, "get") == f'context "nope" does not exist in kubeconfig {control_plane.kubeconfig}'


def test_unreachable_api_server(control_plane: DevCluster, capsys, tmp_path) -> None:
    port = free_port()  # nothing listens there
    config = re.sub(r"server: https://127\.0\.0\.1:\d+", f"server: https://127.0.0.1:{port}",
                    control_plane.kubeconfig.read_text())
    (tmp_path / "kubeconfig").write_text(config)
    message = one_error(run(capsys, "pending", "cq", "x", "--kubeconfig", str(tmp_path / "kubeconfig")), "pending")
    assert message.startswith(f"cannot connect to the API server at https://127.0.0.1:{port}: ")
    assert message.endswith("is the cluster running, and is this the right kubeconfig and context?")


def test_object_not_found(kueue_cluster: DevCluster, capsys) -> None:
    assert one_error(verb(kueue_cluster, capsys, "describe", "wl", "nope", "-n", "default"), "describe") == (
        'workloads.kueue.x-k8s.io "nope" not found in namespace "default"')
    assert one_error(verb(kueue_cluster, capsys, "stop", "clusterqueue", "nope"), "stop") == (
        'clusterqueues.kueue.x-k8s.io "nope" not found')
    assert one_error(verb(kueue_cluster, capsys, "pending", "lq", "nope", "-n", "default"), "pending") == (
        'localqueues.kueue.x-k8s.io "nope" not found in namespace "default"')


def test_crds_not_installed(kueue_cluster: DevCluster, capsys) -> None:
    """The API server answers a group it does not serve with a bare ``404 page not found``: the CRDs
    are missing (here the ClusterQueue one, removed for the test and put back)."""
    kueue_cluster.kubectl("delete", "crd", "clusterqueues.kueue.x-k8s.io", "--wait=true")
    try:
        expected = ('the server doesn\'t have a resource type "clusterqueues" (kueue.x-k8s.io/v1beta2): are '
                    "Kueue's CRDs installed? install them with: pykueue manifests crds | kubectl apply --server-side -f -")
        assert one_error(verb(kueue_cluster, capsys, "get", "clusterqueues"), "get") == expected
        assert one_error(verb(kueue_cluster, capsys, "describe", "cq", "any"), "describe") == expected
        assert one_error(verb(kueue_cluster, capsys, "resume", "cq", "any"), "resume") == expected
    finally:
        install_crds(kueue_cluster)


@pytest.mark.parametrize(("argv", "message"), [
    (["get", "pods"], 'argument TYPE: unknown resource type "pods": use workloads (wl), clusterqueues (cq) or '
                      "localqueues (lq)"),
    (["get", "cq", "--status", "pending"], "--status filters workloads; it does not apply to clusterqueues"),
    (["get", "wl", "--status", "running"], '--status: invalid status "running": must be one of all, pending, '
                                           "quotareserved, admitted, finished"),
    (["get", "wl", "x", "-A"], "a resource cannot be retrieved by name across all namespaces"),
    (["stop", "wl", "x", "--keep-already-running"],
     "--keep-already-running applies to clusterqueues and localqueues (a workload is simply deactivated)"),
    (["pending", "wl", "x"], "pending lists the workloads of a clusterqueue or a localqueue, not of a workload"),
    (["describe", "cq"], "the following arguments are required: NAME"),
    (["get", "wl", "--request-timeout", "0s"], "argument --request-timeout: '0s' must be more than 0"),
])
def test_usage_errors_exit_2_with_the_usage(argv: list[str], message: str, capsys) -> None:
    r = run(capsys, *argv)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"usage: pykueue {argv[0]} ")
    assert r.err.splitlines()[-1] == f"pykueue {argv[0]}: error: {message}"
