"""MultiKueue's pure decisions (pykueue.engine.multikueue), each expected value worked out by hand from
upstream's rules: AllAtOnce offers every usable worker; Incremental adds up to 3 workers a round, in
name order, a round lasting 5 minutes; the earliest admission wins; a lost worker is waited for
workerLostTimeout from the first loss; the AdmissionCheck's Active condition by its clusters."""

from pykueue.engine import multikueue as mk


def test_all_at_once_offers_every_usable_worker_sorted() -> None:
    assert mk.all_at_once(["w2", "w1", "w3"]) == ["w1", "w2", "w3"]
    assert mk.all_at_once([]) == []


def test_incremental_rounds_of_three_in_name_order() -> None:
    clusters = ["e", "a", "d", "b", "c"]
    first, wait = mk.incremental_round([], clusters, None, now=100.0)
    assert (first, wait) == (["a", "b", "c"], 300.0)
    # within the round nothing changes; the wait is what is left of it
    assert mk.incremental_round(first, clusters, 100.0, now=250.0) == (None, 150.0)
    assert mk.incremental_round(first, clusters, 100.0, now=400.0) == (None, 0.0)  # 300 s: still the round
    second, _ = mk.incremental_round(first, clusters, 100.0, now=400.5)
    assert second == ["a", "b", "c", "d", "e"]
    assert mk.incremental_round(second, clusters, 400.5, now=800.0) == (None, None)  # every one offered


def test_the_earliest_admission_wins() -> None:
    assert mk.first_admitted({"w1": None, "w2": None}) is None
    assert mk.first_admitted({"w1": "2026-01-01T00:00:05Z", "w2": "2026-01-01T00:00:03Z"}) == "w2"
    assert mk.first_admitted({"w2": "2026-01-01T00:00:03Z", "w1": "2026-01-01T00:00:03Z"}) == "w1"


def test_worker_lost_wait_counts_from_the_first_loss() -> None:
    assert mk.worker_lost_wait(lost_since=100.0, now=110.0, timeout=30.0) == 20.0
    assert mk.worker_lost_wait(lost_since=100.0, now=130.0, timeout=30.0) == 0.0
    assert mk.worker_lost_wait(lost_since=100.0, now=500.0, timeout=30.0) == 0.0


def test_check_active_condition() -> None:
    assert mk.check_active(["w1", "w2"], [], []) == mk.Condition(True, "Active", "The admission check is active")
    assert mk.check_active(["w1", "w2"], ["w2"], []) == mk.Condition(
        True, "SomeActiveClusters", "Missing clusters: [w2]")
    assert mk.check_active(["w1", "w2"], ["w2"], ["w1"]) == mk.Condition(
        False, "NoUsableClusters", "Missing clusters: [w2], Inactive clusters: [w1]")


def test_parameters_must_name_a_multikueue_config() -> None:
    assert mk.bad_parameters(None) == "missing parameters reference"
    assert mk.bad_parameters({"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "x"}) == (
        "bad parameters reference")
    assert mk.bad_parameters({"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "x"}) is None


def test_builtin_dispatchers() -> None:
    assert mk.builtin_dispatcher("kueue.x-k8s.io/multikueue-dispatcher-all-at-once")
    assert mk.builtin_dispatcher("kueue.x-k8s.io/multikueue-dispatcher-incremental")
    assert not mk.builtin_dispatcher("example.com/my-dispatcher")
