"""The kinds' import contracts take their packages from the registry (tests/packaging/kind_contracts.py):
every registered kind's package, and nothing that registers no kind (the shared parts beside them)."""

from tests.packaging.kind_contracts import kind_packages


def test_the_kind_packages_are_the_registered_ones() -> None:
    assert kind_packages() == [f"pykueue.jobs.{k}" for k in (
        "deployment", "jaxjob", "job", "jobset", "leaderworkerset", "mpijob", "paddlejob", "pod", "pytorchjob", "ray",
        "statefulset", "tfjob", "xgboostjob")]
