"""A status someone else changed after this controller's write is written again (issue 51, item 3):
``a`` (3 cpu) is admitted and its status written (the API server answers resourceVersion "2", and
the informer then shows that copy). Then another writer (a stalled deposed leader, a user's status
patch) takes the admission off, or writes QuotaReserved=False, while the engine still counts ``a``
admitted and its job runs. The writer compares with the cached object once the cache has shown its own
write, so it writes the admission again. Before: it compared only with its memory of what it wrote,
found no change, and the API went on showing ``a`` without quota while its job ran. A copy the cache
shows before its own write landed (lagging) is not taken for another writer's."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from pykueue.controller.core import views
from pykueue.engine.workload import State
from tests.controller.controllers import controller_with, modified, workload
from tests.controller.fakes import FakeKube, stop, until


class VersionedKube(FakeKube):
    """The API server's answer to an apply: the object with a new resourceVersion."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 1

    async def apply(self, res: Any, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        answer = copy.deepcopy(await super().apply(res, body, **kw))
        self.version += 1
        answer["metadata"]["resourceVersion"] = str(self.version)
        return answer


async def _written(ctl, kube: FakeKube, calls: int) -> None:
    """The running writer has made ``calls`` applies in all and has nothing more due."""
    await until(lambda: len(kube.calls) >= calls and not ctl.status_writer.dirty)
    await asyncio.sleep(0.05)  # nothing more goes out


def _as_written(ctl, kube: FakeKube, version: str) -> dict[str, Any]:
    """The informer's copy of ``ns/a`` after the writer's last apply landed."""
    obj = copy.deepcopy(ctl.informers["workloads"].get("ns/a"))
    obj["metadata"]["resourceVersion"] = version
    obj["status"] = copy.deepcopy(kube.applied[-1]["status"])
    return obj


def _admitting_a(scenario) -> None:
    """``scenario(ctl, kube)`` run beside the status writer, once a scheduling pass has admitted ``a``."""
    ctl, _ = controller_with(workload("a", "3"))
    kube = VersionedKube()
    ctl.status_writer.kube = kube  # type: ignore[assignment]

    async def main() -> None:
        task = asyncio.create_task(ctl.status_writer.run())
        ctl.run_cycle()
        await scenario(ctl, kube)
        await stop(task)

    asyncio.run(main())


def test_an_admission_another_writer_took_off_is_written_again() -> None:

    async def scenario(ctl, kube: FakeKube) -> None:
        assert ctl.engine.state_of("ns/a") is State.ADMITTED
        await _written(ctl, kube, 1)
        admitted = _as_written(ctl, kube, "2")
        assert admitted["status"]["admission"]["clusterQueue"] == "cq"
        modified(ctl, admitted)  # the cache shows our write: nothing to write again
        await _written(ctl, kube, 1)
        assert kube.calls == ["a"]

        foreign = copy.deepcopy(admitted)
        foreign["metadata"]["resourceVersion"] = "3"
        foreign["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                             "message": "someone else's",
                                             "lastTransitionTime": "2026-01-01T00:00:09Z"}]}
        modified(ctl, foreign)
        assert views.holds_quota(ctl.engine, "ns/a")  # the engine still counts it: its job runs
        await _written(ctl, kube, 2)
        rewritten = kube.applied[-1]
        assert rewritten["status"]["admission"] == admitted["status"]["admission"]
        assert {c["type"]: c["status"] for c in rewritten["status"]["conditions"]} == {
            "QuotaReserved": "True", "Admitted": "True"}

    _admitting_a(scenario)


def test_a_cache_that_lags_the_writers_own_write_is_not_another_writer() -> None:
    """The informer still shows the copy from before the write (resourceVersion "1", no status): that
    is the cache lagging, not a change, so nothing is written again; only a copy at or after the
    write's own resourceVersion is compared."""

    async def scenario(ctl, kube: FakeKube) -> None:
        await _written(ctl, kube, 1)
        stale = copy.deepcopy(ctl.informers["workloads"].get("ns/a"))
        stale["metadata"]["labels"] = {"touched": "yes"}  # some other change the watch delivers first
        modified(ctl, stale)
        ctl.status_writer.mark("ns/a")  # even when due for another reason, the same status is not sent again
        await _written(ctl, kube, 1)
        assert kube.calls == ["a"]

    _admitting_a(scenario)
