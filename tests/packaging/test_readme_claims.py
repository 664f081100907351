"""What the README and docs/ say about the chart and the controller agrees with them (issue 24): leader
election, the visibility API, and where `helm install` cannot work (the dev cluster, whose kwok fakes the
controller's own pod)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from pykueue.controller.visibility import api as visibility

REPO = Path(__file__).resolve().parents[2]


def readme() -> str:
    """The README and every page of docs/ it links to, as one text: sentences across line breaks."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return " ".join(" ".join(p.read_text().split()) for p in pages)


def test_leader_election_as_the_chart_has_it() -> None:
    values = yaml.safe_load((REPO / "charts" / "pykueue" / "values.yaml").read_text())
    assert values["leaderElection"]["enabled"] is True
    text = readme()
    assert "no leader election" not in text
    assert "Leader election is on by default (`leaderElection.enabled`), so `replicaCount` may be more than 1" in text


def test_the_visibility_api_is_said_to_be_served() -> None:
    assert visibility.API_SERVICES == ("v1beta2.visibility.kueue.x-k8s.io", "v1beta1.visibility.kueue.x-k8s.io")
    text = readme()
    assert not re.search(r"does not serve (it|the visibility API) yet", text)
    assert "The controller serves it too" in text


def test_helm_on_the_dev_cluster_is_warned_about_beside_helm_install() -> None:
    """Beside `helm install`: on the dev cluster, tier 3's real node runs the chart's pod; tier 2's
    kwok only fakes it."""
    text = (REPO / "docs" / "cluster.md").read_text()
    after = " ".join(text.split("helm install pykueue charts/pykueue", 1)[1].split("\n## ", 1)[0].split())
    assert "pykueue dev-cluster up --tier 3" in after
    assert "On tier 2 kwok fakes every pod" in after
