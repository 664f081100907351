"""A controller run from a kubeconfig with ``--webhooks-on-stop fail-open``: it registers its webhooks
for its loopback URL, and when it stops they stay registered but ignore failures, so the cluster keeps
working unchecked until it comes back (the README's block covers the default, ``remove``:
tests/packaging/test_readme_run.py). A visibility APIService it finds with nothing serving it is named
in a warning with the command that removes it.

The module stops the session's controller and starts its own; afterwards it deletes the configurations,
puts the CRDs' conversion back on the Service and starts the session's controller again.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykueue.controller.webhooks import local, names
from pykueue.devcluster.cluster import free_port
from tests.e2e.conftest import Kueue, forget_local_webhooks

ATTACKER = "127.0.0.2"  # another client address than the API server's (the caps are per address)
HEADS = 600
HEAD = b"POST /mutate-batch-v1-job HTTP/1.1\r\nHost: x\r\n" + (b"X-Pad: " + b"p" * 1000 + b"\r\n") * 30  # ~30 KiB, unfinished
SLOW_BODIES = 4  # more than the webhook server's worker threads


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@contextlib.contextmanager
def _slow_callers(port: int) -> Iterator[list[ssl.SSLSocket]]:
    """What an attacker inside the cluster can do to the webhook port: ``SLOW_BODIES`` reviews whose
    bodies trickle a byte a second, and ``HEADS`` connections each holding an unfinished head of about
    30 KiB, all from one address. Upstream's server (Go's net/http) bounds the same by MaxHeaderBytes and
    read timeouts; here the head limit, the per-client cap and the body deadline hold them."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    held: list[ssl.SSLSocket] = []
    stop = threading.Event()

    def connect() -> ssl.SSLSocket | None:
        raw = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(ATTACKER, 0))
        try:
            conn = context.wrap_socket(raw)
        except (OSError, ssl.SSLError):  # refused at the cap: closed before or during the handshake
            raw.close()
            return None
        held.append(conn)
        return conn

    def trickle(conn: ssl.SSLSocket) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(b"POST /mutate-batch-v1-job HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1048576\r\n\r\n{")
            while not stop.wait(1.0):
                conn.sendall(b" ")

    threads = []
    try:
        for _ in range(SLOW_BODIES):
            if (conn := connect()) is not None:
                threads.append(threading.Thread(target=trickle, args=(conn,), daemon=True))
                threads[-1].start()
        for _ in range(HEADS):
            conn = connect()
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(HEAD)
        yield held
    finally:
        stop.set()
        for conn in held:
            with contextlib.suppress(OSError):
                conn.close()
        for thread in threads:
            thread.join(5)


def _job(name: str, namespace: str) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})


@pytest.mark.e2e
def test_fail_open_on_stop_keeps_the_configurations_ignoring_failures_and_stale_apis_are_named(kueue: Kueue, ns: str, tmp_path: Path) -> None:
    cluster = kueue.cluster
    port = free_port()
    configs = list(zip(("mutatingwebhookconfiguration", "validatingwebhookconfiguration"),
                       names.configuration_names(names.SERVICE), strict=True))
    # a visibility APIService an install left behind, whose Service does not exist: warned about
    stale = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
             "metadata": {"name": "v1beta1.visibility.kueue.x-k8s.io"},
             "spec": {"group": "visibility.kueue.x-k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                      "versionPriority": 90, "insecureSkipTLSVerify": True,
                      "service": {"name": "gone", "namespace": ns, "port": 443}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(stale))
    kueue.stop()
    # a controller of its own: its webhooks fail open on stop and its visibility API is served, which no other test wants
    mine = Kueue(cluster, tmp_path / "local-controller.log", args=(
        f"--webhook-port={port}", f"--webhook-cert-dir={tmp_path / 'certs'}", "--webhooks-on-stop=fail-open",
        f"--visibility-port={free_port()}"))
    try:
        mine.start(ready=b"webhooks registered")
        warned = [line for line in mine.log.read_text().splitlines() if "stale APIService" in line]
        assert len(warned) == 1 and "v1beta1.visibility.kueue.x-k8s.io" in warned[0], warned
        assert "kubectl delete apiservice v1beta1.visibility.kueue.x-k8s.io" in warned[0]
        for kind, name in configs:
            config = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
            assert local.is_ours(config)
            assert {w["failurePolicy"] for w in config["webhooks"]} == {"Fail"}
            assert all(w["clientConfig"]["url"].startswith(f"https://127.0.0.1:{port}/") for w in config["webhooks"])
        crd = json.loads(cluster.kubectl("get", "crd", names.crd_name("clusterqueues"), "-o", "json").stdout)
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] == f"https://127.0.0.1:{port}/convert"
        created = cluster.kubectl("create", "-f", "-", "-o", "json", input=_job("while-running", ns))
        assert json.loads(created.stdout)["spec"]["suspend"] is True  # the webhook suspended it

        # slow bodies and 600 half-sent heads from one pod's address: the API server's reviews (from its
        # own address) are still answered well within its 10 s webhook timeout, memory stays bounded
        assert mine.process is not None
        before = _rss_mib(mine.process.pid)
        with _slow_callers(port) as held:
            assert len(held) > SLOW_BODIES, "the attacker's connections were all refused"
            started = time.monotonic()
            created = cluster.kubectl("create", "-f", "-", "-o", "json", input=_job("under-attack", ns))
            took = time.monotonic() - started
            assert json.loads(created.stdout)["spec"]["suspend"] is True
            assert took < 5, f"a Job create took {took:.1f} s behind slow callers"
            rss = _rss_mib(mine.process.pid)
            assert rss < 400, f"the controller holds {rss:.0f} MiB behind {len(held)} slow callers"
        print(f"\nbehind {len(held)} slow callers: a Job create took {took:.2f} s, the controller held {rss:.0f} MiB"
              f" ({before:.0f} MiB before)")

        mine.stop()  # SIGTERM: the configurations stay, failing open
        assert "webhooks left failing open" in mine.log.read_text()
        for kind, name in configs:
            config = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
            assert {w["failurePolicy"] for w in config["webhooks"]} == {"Ignore"}
        created = cluster.kubectl("create", "-f", "-", "-o", "json", input=_job("while-away", ns))
        assert json.loads(created.stdout)["spec"].get("suspend") is False  # unchecked, not refused
    finally:
        mine.stop()
        cluster.kubectl("delete", "apiservice", stale["metadata"]["name"], "--ignore-not-found", check=False)
        forget_local_webhooks(cluster)
        kueue.start()
