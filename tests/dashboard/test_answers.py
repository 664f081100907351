"""The engine's answers against live objects: explain for a pending workload and the what-if box, with
every figure worked out by hand (ClusterQueue solo: 2 cpu, no cohort; big holds 2, small waits for 1)."""

from __future__ import annotations

import pytest

from pykueue.dashboard.answers import Answers, WhatIfError
from tests.dashboard.objects import NOW, job, live


def test_a_pending_workload_is_explained_as_pykueue_explain_words_it() -> None:
    doc = Answers().explain(live(), "team/small")
    assert (doc["state"], doc["reason"], doc["clusterQueue"]) == ("Pending", "WaitingForQuota", "solo")
    assert doc["queue"]["position"] == 0
    (row,) = doc["quota"]
    assert (row["requested"], row["nominal"], row["used"], row["available"], row["short"]) == ("1", "2", "2", "0", "1")
    assert doc["toBeAdmitted"][0].startswith("1 more cpu free in flavor default")


def test_an_admitted_workload_keeps_its_recorded_admission() -> None:
    doc = Answers().explain(live(), "team/big")
    assert (doc["state"], doc["flavors"]) == ("Admitted", {"cpu": "default"})


def test_an_unknown_workload_has_no_answer() -> None:
    assert Answers().explain(live(), "team/nothing") is None


def test_what_if_into_a_full_queue_waits_behind_the_pending_one() -> None:
    doc = Answers().what_if(live(), job("new", "lq"), NOW)
    assert (doc["state"], doc["reason"]) == ("Pending", "WaitingForQuota")
    assert (doc["queue"]["position"], doc["queue"]["ahead"]) == (1, ["team/small"])


def test_what_if_into_an_empty_queue_is_admitted_now() -> None:
    doc = Answers().what_if(live(), job("new", "spare", cpu="3"), NOW)
    assert (doc["state"], doc["clusterQueue"], doc["flavors"]) == ("Admitted", "empty", {"cpu": "default"})


def test_what_if_never_fits_says_so() -> None:
    doc = Answers().what_if(live(), job("huge", "spare", cpu="5"), NOW)
    assert doc["state"] == "Pending"
    assert any("can never have more than 4" in line for line in doc["toBeAdmitted"])


@pytest.mark.parametrize(("text", "message"), [
    ("a: [", "YAML syntax error at line 2"),
    ("kind: Pod\n", "paste a batch/v1 Job or a Workload"),
    ("kind: Job\n---\nkind: Job\n", "exactly one"),
    (job("new", "lq", cpu="lots"), "cpu"),
    (job("plain", "lq").replace("    kueue.x-k8s.io/queue-name: lq\n", "    team: a\n"), "queue-name label"),
])
def test_bad_pastes_get_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(WhatIfError) as info:
        Answers().what_if(live(), text, NOW)
    assert message in str(info.value)


def test_a_name_already_in_use_is_refused() -> None:
    with pytest.raises(WhatIfError, match="team/big already exists"):
        Answers().what_if(live(), job("big", "lq"), NOW)


def test_what_if_names_the_workloads_it_would_preempt() -> None:
    objs = live()
    objs["clusterqueues"]["solo"]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    objs["priorityclasses"] = {"high": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                        "metadata": {"name": "high"}, "value": 1000}}
    text = job("urgent", "lq", cpu="2").replace("      restartPolicy: Never\n",
                                                 "      restartPolicy: Never\n      priorityClassName: high\n")
    doc = Answers().what_if(objs, text, NOW)
    assert (doc["state"], doc["priority"], doc["preempts"]) == ("Admitted", 1000, ["team/big"])
    assert Answers().what_if(live(), job("new", "spare"), NOW)["preempts"] == []


def test_a_paste_whose_aliases_expand_it_is_refused_before_anything_walks_it() -> None:
    """A Workload of about 700 bytes whose aliases expand one field (typed as anything) to 10**7 values:
    read as plain YAML it was validated and keyed by ``repr`` downstream, about 160 MB and seconds of
    the serving process per paste (a level more, ten times that). It gets the limits files get."""
    from tests.api.helpers import laughs

    bomb = "".join(f"        {line}\n" for line in laughs(7).splitlines())
    text = (f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {{name: w, namespace: team}}\n"
            f"spec:\n  queueName: spare\n  podSets:\n  - name: main\n    count: 1\n    template:\n      spec:\n"
            f"        containers: [{{name: c, image: i, resources: {{requests: {{cpu: '1'}}}}}}]\n"
            f"        hostAliases:\n{bomb}")
    assert len(text) < 800
    with pytest.raises(WhatIfError, match="^YAML error: aliases expand the document to more than 131072 values$"):
        Answers().what_if(live(), text, NOW)
