"""A name given on the command line that cannot be one segment of a REST path is one error line and
exit 1 before anything is sent (as kubectl's ``invalid resource name``): the kubeconfig here points at
a port where nothing listens, so a request that went out would fail with "cannot connect" instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.devcluster.cluster import free_port
from tests.kubectl.conftest import run

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}
users:
- name: u
  user: {{token: not-a-real-token}}
contexts:
- name: c
  context: {{cluster: c, user: u, namespace: default}}
current-context: c
"""


@pytest.mark.parametrize(("argv", "message"), [
    (["describe", "wl", "a?b"], "invalid resource name \"a?b\": may not contain '?'"),
    (["describe", "cq", "../x"], "invalid resource name \"../x\": may not contain '/'"),
    (["stop", "wl", "%2e%2e"], "invalid resource name \"%2e%2e\": may not contain '%'"),
    (["resume", "lq", ".."], "invalid resource name \"..\": may not be '..'"),
    (["pending", "lq", "a#b"], "invalid resource name \"a#b\": may not contain '#'"),
    (["pending", "cq", "a?limit=1"], "invalid resource name \"a?limit=1\": may not contain '?'"),
])
def test_a_name_that_is_no_path_segment_is_refused_before_any_request(
        argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(port=free_port()))
    result = run(capsys, *argv, "--kubeconfig", str(kubeconfig), "--request-timeout", "5s")
    assert (result.code, result.out) == (1, "")
    assert result.err.splitlines() == [f"pykueue {argv[0]}: error: {message}"]
