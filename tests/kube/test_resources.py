"""A name or namespace goes into a REST path as one segment or not at all: what apimachinery's
``path.IsValidPathSegmentName`` refuses (client-go's ``Request.Name`` and ``Request.Namespace`` check
it), plus '?', '#' and the empty string, is ``InvalidPathSegment`` before any request; other characters
that are not plain URL text are percent-quoted; a DNS name's path is what it always was."""

from __future__ import annotations

import asyncio

import pytest

from pykueue.kube import resources as r
from pykueue.kube.client import Kube


def test_dns_names_make_the_paths_they_always_made() -> None:
    assert r.SECRET.path("pykueue-system", "worker-1.kubeconfig") == (
        "/api/v1/namespaces/pykueue-system/secrets/worker-1.kubeconfig")
    assert r.WORKLOAD.path("team-a", "job-x-1a2b3", "status") == (
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/job-x-1a2b3/status")
    assert r.CLUSTER_QUEUE.path("ignored", "cq") == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"
    assert r.SECRET.path() == "/api/v1/secrets"
    assert r.SECRET.path("ns") == "/api/v1/namespaces/ns/secrets"
    # RBAC-style names (a path segment, not a subdomain) stay as they are
    assert r.SECRET.path("ns", "system:node:a") == "/api/v1/namespaces/ns/secrets/system:node:a"


@pytest.mark.parametrize(("name", "message"), [
    ("../x", "invalid resource name \"../x\": may not contain '/'"),
    ("a/b", "invalid resource name \"a/b\": may not contain '/'"),
    ("%2e%2e", "invalid resource name \"%2e%2e\": may not contain '%'"),
    ("a?b", "invalid resource name \"a?b\": may not contain '?'"),
    ("a#b", "invalid resource name \"a#b\": may not contain '#'"),
    (".", "invalid resource name \".\": may not be '.'"),
    ("..", "invalid resource name \"..\": may not be '..'"),
    ("", 'invalid resource name "": may not be empty'),
    (1, "invalid resource name 1: must be a string"),
])
def test_a_name_that_would_change_the_path_is_refused(name: object, message: str) -> None:
    with pytest.raises(r.InvalidPathSegment) as caught:
        r.SECRET.path("ns", name)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("namespace", ["..", "../kube-system", "a?b", "%2e", ""])
def test_a_namespace_that_would_change_the_path_is_refused(namespace: str) -> None:
    with pytest.raises(r.InvalidPathSegment, match=r"^invalid namespace "):
        r.SECRET.path(namespace, "s")


def test_other_characters_are_percent_quoted() -> None:
    assert r.SECRET.path("ns", "a b") == "/api/v1/namespaces/ns/secrets/a%20b"
    assert r.SECRET.path("ns", "é\n") == "/api/v1/namespaces/ns/secrets/%C3%A9%0A"


def test_the_client_refuses_before_it_sends_anything() -> None:
    """``Kube.get`` builds the path before it touches its connection (here: none at all)."""
    kube = Kube(None)  # type: ignore[arg-type]
    with pytest.raises(r.InvalidPathSegment, match="may not contain '/'"):
        asyncio.run(kube.get(r.SECRET, "../../apis/x", "ns"))
    with pytest.raises(r.InvalidPathSegment, match="may not be '..'"):
        asyncio.run(kube.delete(r.SECRET, "..", "ns"))
