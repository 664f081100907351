"""The leader elector alone, against an in-memory Lease with the API server's optimistic concurrency:
what kubectl cannot stage, such as an API server that stops answering a leader mid-term."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from pykueue.controller.runtime.leader import LEASE_NAME as LEASE
from pykueue.controller.runtime.leader import LeaderElectionLost, LeaderElector, run_as_leader
from pykueue.kube.client import ApiError, Kube


class FakeLeases:
    """get/create/replace of Leases with the API server's optimistic concurrency; `down` makes every
    request hang, as an unreachable API server does."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.down = False
        self.lock = threading.Lock()  # the renewal thread and the test's loop both call it: each request atomic
        self.renewals = 0

    async def close(self) -> None:
        return None

    async def _maybe_hang(self) -> None:
        while self.down:
            await asyncio.sleep(0.05)

    def _stored(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = json.loads(json.dumps(obj))
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[obj["metadata"]["name"]] = stored
        return json.loads(json.dumps(stored))

    async def get(self, res: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        await self._maybe_hang()
        with self.lock:
            if name not in self.objects:
                raise ApiError(404, {"reason": "NotFound"}, "GET", name)
            return json.loads(json.dumps(self.objects[name]))

    async def create(self, res: Any, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        await self._maybe_hang()
        with self.lock:
            if obj["metadata"]["name"] in self.objects:
                raise ApiError(409, {"reason": "AlreadyExists"}, "POST", obj["metadata"]["name"])
            return self._stored(obj)

    async def replace(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        await self._maybe_hang()
        with self.lock:
            current = self.objects[obj["metadata"]["name"]]
            if obj["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise ApiError(409, {"reason": "Conflict"}, "PUT", obj["metadata"]["name"])
            self.renewals += 1
            return self._stored(obj)


@pytest.mark.parametrize("on_thread", [True, False], ids=["renewal-thread", "same-loop"])
def test_elector_rules_without_a_cluster(on_thread: bool) -> None:
    """One winner among two candidates; the loser takes over only after the lease duration of silence;
    a leader whose renewals hang stops within the renew deadline; a released Lease is taken at once.
    The same whether the renewals run on their own thread (the controller's way) or on the caller's loop."""
    async def scenario() -> None:
        api = FakeLeases()
        timing = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}
        a = LeaderElector(api, "ns", identity="a", **timing)  # type: ignore[arg-type]
        b = LeaderElector(api, "ns", identity="b", **timing)  # type: ignore[arg-type]
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()  # held, and just seen changing
        stale = dict(api.objects[LEASE])
        assert await a.try_acquire_or_renew()  # a renews: b's copy is now stale
        b.lease = stale
        with pytest.raises(Exception, match="409"):
            await api.replace(None, stale)  # an update from an old read is refused

        # a leads and renews; its API goes away: it stops within the renew deadline, before b may take over.
        work_stopped = asyncio.Event()

        async def work() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                work_stopped.set()

        a2 = LeaderElector(api, "ns", identity="a", **timing)  # type: ignore[arg-type]
        leading = asyncio.create_task(run_as_leader(a2, work, (lambda: api) if on_thread else None))  # type: ignore[arg-type,return-value]
        await asyncio.sleep(0.5)
        assert a2.leading and not work_stopped.is_set()
        standby = asyncio.create_task(b.acquire())
        await asyncio.sleep(0.5)
        assert not standby.done()
        api.down = True
        cut = time.monotonic()
        with pytest.raises(LeaderElectionLost):
            await leading
        assert work_stopped.is_set() and time.monotonic() - cut <= timing["renew_deadline"] + 0.1
        api.down = False
        await asyncio.wait_for(standby, 5)
        assert time.monotonic() - cut >= timing["renew_deadline"]  # not before a2 had stopped
        assert api.objects[LEASE]["spec"]["holderIdentity"] == "b"
        assert api.objects[LEASE]["spec"]["leaseTransitions"] == 1

        # b releases; a third candidate takes the Lease at its first try.
        await b.release()
        assert api.objects[LEASE]["spec"]["holderIdentity"] == ""
        c = LeaderElector(api, "ns", identity="c", **timing)  # type: ignore[arg-type]
        assert await c.try_acquire_or_renew()

    asyncio.run(scenario())


def test_a_leader_whose_loop_is_held_past_the_renew_deadline_keeps_renewing_on_its_thread() -> None:
    """A scheduling pass or a relist may hold the controller's loop longer than the renew deadline:
    the renewal thread goes on renewing meanwhile, so the leader neither loses the Lease nor refuses
    its own writes afterwards, and a standby never takes over. On the caller's loop (before the
    thread), the same stall cost the leadership: no renewal for 1.6 s against a 1 s deadline."""
    async def scenario() -> None:
        api = FakeLeases()
        timing = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}
        leader = LeaderElector(api, "ns", identity="a", **timing)  # type: ignore[arg-type]
        standby = LeaderElector(api, "ns", identity="b", **timing)  # type: ignore[arg-type]
        started = asyncio.Event()

        async def work() -> None:
            started.set()
            await asyncio.Event().wait()

        leading = asyncio.create_task(run_as_leader(leader, work, lambda: api))  # type: ignore[arg-type,return-value]
        await asyncio.wait_for(started.wait(), 5)
        before = api.renewals
        time.sleep(1.6)  # the loop held: no task of it runs, the thread's renewals do
        assert api.renewals >= before + 4  # every retry period (0.2 s) while held
        leader.check_leading()  # a write decided now still goes out
        assert api.objects[LEASE]["spec"]["holderIdentity"] == "a"
        assert not await standby.try_acquire_or_renew()
        assert not leading.done()
        leading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leading
        assert api.objects[LEASE]["spec"]["holderIdentity"] == ""  # released on the way out

    asyncio.run(scenario())


def test_a_leader_whose_loop_stalled_past_the_renew_deadline_sends_no_write() -> None:
    """The controller's writes go through ``Kube.guarded(elector.check_leading)``: while the Lease was
    renewed within the renew deadline they go out; once the loop was held past it (no chance for
    ``hold`` to notice), a write raises LeaderElectionLost before any request, and reads still go."""
    clock = [100.0]
    elector = LeaderElector(FakeLeases(), "ns", identity="a", lease_duration=15, renew_deadline=10,  # type: ignore[arg-type]
                            retry_period=2, monotonic=lambda: clock[0])
    elector.leading, elector.renewed_at = True, 100.0
    sent: list[str] = []

    class Api:  # what Kube.raw reads of kubernetes_asyncio's client, recording what would be sent
        default_headers: dict[str, str] = {}

        class configuration:  # noqa: N801 - kubernetes_asyncio's attribute name
            host = "https://127.0.0.1:6443"

        async def update_params_for_auth(self, headers: Any, query: Any, auth: Any) -> None:
            return None

        class rest_client:  # noqa: N801
            proxy = proxy_headers = server_hostname = None

            class pool_manager:  # noqa: N801
                @staticmethod
                async def request(method: str, url: str, **kw: Any) -> str:
                    sent.append(f"{method} {url}")
                    return "answer"

    kube = Kube(Api()).guarded(elector.check_leading)  # type: ignore[arg-type]
    clock[0] = 109.0
    assert asyncio.run(kube.raw("PATCH", "/w")) == "answer"
    clock[0] = 110.5  # the loop was held: 10.5 s since the last renewal
    with pytest.raises(LeaderElectionLost):
        asyncio.run(kube.raw("PATCH", "/w"))
    assert asyncio.run(kube.raw("GET", "/w")) == "answer"
    assert sent == ["PATCH https://127.0.0.1:6443/w", "GET https://127.0.0.1:6443/w"]
    elector.leading = False
    clock[0] = 100.0
    with pytest.raises(LeaderElectionLost):
        asyncio.run(kube.raw("POST", "/w"))
