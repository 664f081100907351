"""What the dashboard reads off the watched objects: the cohort tree, quota bars, queue order, reasons,
preemptions and a workload's timeline, each worked out by hand from the objects below."""

from __future__ import annotations

from datetime import UTC, datetime

from pykueue.dashboard import view
from tests.dashboard import objects as o

NOW = datetime(2026, 1, 1, 0, 10, 0, tzinfo=UTC)
PREEMPTED = ("Preempted to accommodate a workload (UID: uid-boss, JobUID: uid-job-boss) due to "
             "prioritization in the ClusterQueue")


def scene() -> dict:
    boss_c, boss_a = o.admitted("team-a", "2026-01-01T00:05:00Z", "2")
    old_c, old_a = o.admitted("team-a", "2026-01-01T00:01:00Z")
    waiting = [o.cond("QuotaReserved", "False", "Pending",
                      "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                      "default, 1 more needed")]
    return o.objects(
        resourceflavors=[o.flavor("default")],
        cohorts=[o.cohort("org", "root"), o.cohort("root")],
        clusterqueues=[o.cluster_queue("team-a", "org", "3", used="3", pending=3, admitted=2),
                       o.cluster_queue("team-b", "org", "2", borrowing="2", lending="1", used="3", borrowed="1",
                                       share=250),
                       o.cluster_queue("solo", None, "1")],
        localqueues=[o.local_queue("team", "lq", "team-a")],
        workloads=[
            o.workload("boss", priority=100, cpu="2", created="2026-01-01T00:04:00Z", conditions=boss_c, admission=boss_a,
                       owner="boss"),
            o.workload("old", created="2026-01-01T00:00:00Z", conditions=old_c, admission=old_a),
            o.workload("low-early", created="2026-01-01T00:02:00Z", conditions=waiting),
            o.workload("high-late", priority=10, created="2026-01-01T00:08:00Z", conditions=waiting),
            o.workload("victim", created="2026-01-01T00:03:00Z", conditions=[
                o.cond("QuotaReserved", "False", "Pending", "waiting again", "2026-01-01T00:05:00Z"),
                o.cond("Evicted", "True", "Preempted", PREEMPTED, "2026-01-01T00:05:00Z"),
                o.cond("Preempted", "True", "InClusterQueue", PREEMPTED, "2026-01-01T00:05:00Z")]),
            o.workload("stopped", created="2026-01-01T00:00:30Z", active=False, conditions=[
                o.cond("QuotaReserved", "False", "Deactivated", "The workload is deactivated")]),
        ],
        jobs=[{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "boss", "namespace": "team"},
               "spec": {"suspend": False, "parallelism": 2}, "status": {"active": 2}}],
        events=[{"kind": "Event", "metadata": {"name": "e1", "namespace": "team"},
                 "involvedObject": {"kind": "Job", "name": "boss"}, "type": "Normal", "reason": "Started",
                 "message": "Admitted by clusterQueue team-a", "lastTimestamp": "2026-01-01T00:05:01Z"},
                {"kind": "Event", "metadata": {"name": "e2", "namespace": "other"},
                 "involvedObject": {"kind": "Job", "name": "boss"}, "type": "Normal", "reason": "Elsewhere",
                 "message": "another namespace's Job of the same name", "lastTimestamp": "2026-01-01T00:05:02Z"}],
    )


def test_the_cohort_tree_nests_cohorts_by_parent_and_keeps_queues_without_one_apart() -> None:
    roots, lone = view.cohort_tree(scene())
    assert [r.name for r in roots] == ["root"]
    assert [c.name for c in roots[0].cohorts] == ["org"]
    assert [q.name for q in roots[0].cohorts[0].queues] == ["team-a", "team-b"]
    assert [q.name for q in lone] == ["solo"]


def test_a_parent_cycle_is_cut_and_each_member_shown() -> None:
    objs = o.objects(cohorts=[o.cohort("a", "b"), o.cohort("b", "a")])
    roots, _ = view.cohort_tree(objs)
    assert sorted(r.name for r in roots) == ["a", "b"]


def test_bars_read_quota_from_the_spec_and_usage_from_the_status() -> None:
    b = view.queue_summary(scene()["clusterqueues"]["team-b"])
    (bar,) = b.bars
    assert (bar.flavor, bar.resource, bar.nominal, bar.used, bar.borrowed) == ("default", "cpu", 2000, 3000, 1000)
    assert (bar.borrowing_limit, bar.lending_limit, bar.scale) == (2000, 1000, 4000)  # nominal 2 + borrow 2
    assert (bar.text(bar.used), bar.text(None)) == ("3", "-")
    assert b.weighted_share == 250


def test_holders_come_in_admission_order_and_pending_in_kueue_order() -> None:
    rows = view.queue_rows(scene(), "team-a", NOW)
    assert [r.key for r in rows.admitted] == ["team/old", "team/boss"]  # admitted at 00:01, then 00:05
    assert rows.admitted[1].flavors == "default" and rows.admitted[1].age == "6m"
    # priority first (high-late 10), then creation: low-early 00:02 before victim 00:03; stopped is not queued
    assert [(r.key, r.position) for r in rows.pending] == [
        ("team/high-late", 0), ("team/low-early", 1), ("team/victim", 2), ("team/stopped", None)]
    assert rows.pending[0].reason == "Pending" and "1 more needed" in rows.pending[0].message
    assert rows.pending[3].reason == "Deactivated"


def test_a_preemption_shows_on_the_victim_and_on_the_preemptor() -> None:
    rows = view.queue_rows(scene(), "team-a", NOW)
    victim = next(r for r in rows.pending if r.key == "team/victim")
    boss = next(r for r in rows.admitted if r.key == "team/boss")
    assert victim.preempted_by == "team/boss"
    assert boss.preempted == ("team/victim",)
    assert victim.reason == "Pending"  # QuotaReserved=False comes before the eviction's reason


def test_pages_split_long_lists_and_clamp_the_page_number() -> None:
    objs = scene()
    first = view.queue_rows(objs, "team-a", NOW, page=0, page_size=3)
    second = view.queue_rows(objs, "team-a", NOW, page=7, page_size=3)
    assert (first.pages, first.pending_total, len(first.pending)) == (2, 4, 3)
    assert (second.page, [r.key for r in second.pending], second.admitted) == (1, ["team/stopped"], [])


def test_a_workloads_timeline_merges_its_conditions_and_its_owners_events() -> None:
    objs = scene()
    wl = objs["workloads"]["team/boss"]
    items = view.timeline(objs, wl)
    assert [(h.what, h.kind, h.reason) for h in items] == [
        ("condition", "QuotaReserved", "QuotaReserved"), ("condition", "Admitted", "Admitted"),
        ("event", "Normal", "Started")]  # not the other namespace's event
    assert view.owners(wl) == [("Job", "boss")]
    assert view.job_of(objs, wl, "boss")["status"] == {"active": 2}


def test_ages_as_kubectl_prints_them() -> None:
    assert [view.age(s, NOW) for s in ("2026-01-01T00:09:55Z", "2026-01-01T00:00:00Z", "2025-12-31T22:00:00Z",
                                        "2025-12-29T00:10:00Z", None)] == ["5s", "10m", "2h", "3d", ""]


def test_contrast_ratios_match_wcag() -> None:
    assert round(view.contrast("#ffffff", "#000000"), 2) == 21.0
    assert round(view.contrast("#777777", "#ffffff"), 2) == 4.48  # WCAG's own borderline example
    assert view.text_on("#ff7f0e") == "#000000" and view.text_on("#1f77b4") == "#ffffff"
