"""Upstream's StatefulSet webhook on a managed StatefulSet's pod template, live on the tier-2 cluster: a
new image rolls (the update is accepted), a change to the container's requests is refused by
``vstatefulset`` with upstream's path and message; a StatefulSet Kueue does not manage changes freely.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.e2e.conftest import Kueue
from tests.e2e.objects import refused

pytestmark = pytest.mark.e2e
QUEUE = "kueue.x-k8s.io/queue-name"


@pytest.fixture
def hooks(integrations_kueue: Kueue) -> Kueue:
    """The shared integrations controller (tests/e2e/conftest.py's ``integrations_kueue``)."""
    return integrations_kueue


def statefulset(name: str, ns: str, queue: str | None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns, "labels": {QUEUE: queue} if queue else {}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox:1",
                                                           "resources": {"requests": {"cpu": "1"}}}]}}}}


def patch(kueue: Kueue, name: str, ns: str, container: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    body = {"spec": {"template": {"spec": {"containers": [{"name": "c", **container}]}}}}
    return kueue.cluster.kubectl("patch", "statefulset", name, "-n", ns, "--type=strategic", "-p",
                                 json.dumps(body), check=False)


def test_a_managed_statefulset_rolls_an_image_but_keeps_its_requests(hooks: Kueue, ns: str) -> None:
    created = hooks.cluster.kubectl("create", "-f", "-", input=json.dumps(statefulset("db", ns, "lq")), check=False)
    assert created.returncode == 0, created.stderr
    rolled = patch(hooks, "db", ns, {"image": "busybox:2"})
    assert rolled.returncode == 0, rolled.stderr
    refused(patch(hooks, "db", ns, {"resources": {"requests": {"cpu": "2"}}}), "vstatefulset.kb.io",
            'spec.template.spec.containers[0].resources.requests: Invalid value: {"cpu":"2"}: field is immutable')


def test_an_unmanaged_statefulset_changes_its_requests_freely(hooks: Kueue, ns: str) -> None:
    created = hooks.cluster.kubectl("create", "-f", "-", input=json.dumps(statefulset("free", ns, None)), check=False)
    assert created.returncode == 0, created.stderr
    changed = patch(hooks, "free", ns, {"resources": {"requests": {"cpu": "2"}}})
    assert changed.returncode == 0, changed.stderr
