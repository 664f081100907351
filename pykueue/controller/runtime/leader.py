"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's `leaderelection` does it.

Only the replica holding the Lease runs the controller (informers, scheduling, status writes); the
others wait. A standby starts nothing until it is elected, so on takeover it syncs from the API like
a restarted controller: every admission the old leader recorded re-enters the engine admitted, and
nothing is admitted twice. The rules are client-go's:

- a Lease held by someone else is taken only once it has not changed for `leaseDurationSeconds`
  as measured on this replica's own clock since it last saw it change (no trust in others' clocks);
- every write is an update with the `resourceVersion` read, so two candidates never both win;
- the leader renews every `retry_period`; one that has not renewed for `renew_deadline` (shorter than
  the lease duration) stops at once, before anyone else may take over, and the process exits;
- on shutdown the leader releases the Lease (empty holder), so a standby takes over at its next try.

While leading, the renewals run on a thread of their own with their own event loop and connection
(``RenewalThread``), as client-go's elector runs in its own goroutine: a scheduling pass or a relist
that holds the controller's loop does not stop the Lease from being renewed, and each of the
controller's writes still checks, before it is sent, that the last renewal is within the deadline
(``check_leading``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube

log = logging.getLogger("pykueue.leader")

LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"  # upstream Kueue's
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "pykueue-system"
# controller-runtime's defaults.
LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
JITTER = 1.2  # client-go's JitterFactor while waiting to acquire


class LeaderElectionLost(Exception):
    """The Lease was not renewed within the renew deadline: this replica must stop admitting now."""


def default_namespace() -> str:
    """The pod's namespace (its service account's), else the release manifests' namespace."""
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def default_identity() -> str:
    """controller-runtime's: hostname_uuid (the pod name, unique across restarts)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(seconds: float) -> str:
    """A metav1.MicroTime: RFC 3339 with microseconds."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, kube: Kube, namespace: str, *, name: str = LEASE_NAME, identity: str | None = None,
                 lease_duration: float = LEASE_DURATION, renew_deadline: float = RENEW_DEADLINE,
                 retry_period: float = RETRY_PERIOD, monotonic: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        if not lease_duration > renew_deadline > retry_period * JITTER:
            raise ValueError("need lease duration > renew deadline > retry period * 1.2")
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.monotonic = monotonic
        self.wall = wall
        self.lease: dict[str, Any] | None = None  # the last Lease read or written
        self.observed_spec: dict[str, Any] | None = None
        self.observed_at = 0.0  # monotonic time the spec last changed, as seen here
        self.observed = asyncio.Event()  # one answer from the API server about the Lease
        self.leading = False
        self.renewed_at = 0.0
        self._reported_holder: str | None = None

    @property
    def holder(self) -> str:
        return (self.observed_spec or {}).get("holderIdentity") or ""

    # ---- one try, client-go's tryAcquireOrRenew --------------------------------------------------

    async def try_acquire_or_renew(self, kube: Kube | None = None) -> bool:
        """One try on ``kube`` (the renewal thread's connection), else the elector's own."""
        kube = kube or self.kube
        now, stamp = self.monotonic(), micro_time(self.wall())
        mine = {"holderIdentity": self.identity, "leaseDurationSeconds": round(self.lease_duration),
                "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}
        try:
            lease = await kube.get(r.LEASE, self.name, self.namespace)
        except ApiError as exc:
            if exc.status != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": mine}
            try:
                created = await kube.create(r.LEASE, body, self.namespace)
            except ApiError as exc:
                if exc.status == 409:  # another candidate created it first
                    return False
                raise
            self._observe(created, now)
            return True
        self._seen()
        spec = lease.get("spec") or {}
        if spec != self.observed_spec:
            self._observe(lease, now)
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or self.lease_duration
        if holder and holder != self.identity and self.observed_at + duration > now:
            return False  # held, and renewed within its duration as far as this replica has seen
        if holder == self.identity:
            mine["acquireTime"] = spec.get("acquireTime") or stamp
            mine["leaseTransitions"] = spec.get("leaseTransitions") or 0
        else:
            mine["leaseTransitions"] = (spec.get("leaseTransitions") or 0) + 1
        body = {**lease, "spec": {**spec, **mine}}  # metadata keeps the resourceVersion: optimistic
        try:
            updated = await kube.replace(r.LEASE, body)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        self._observe(updated, now)
        return True

    def _observe(self, lease: dict[str, Any], now: float) -> None:
        self.lease = lease
        self.observed_spec = lease.get("spec") or {}
        self.observed_at = now
        self._seen()

    def _seen(self) -> None:
        """``observed`` belongs to the controller's loop: set there, and only before the renewal thread
        starts (acquiring sets it; once set it stays set)."""
        if not self.observed.is_set():
            self.observed.set()

    async def _try(self, timeout: float, kube: Kube | None = None) -> bool:
        """One try that neither raises nor outlives `timeout`."""
        try:
            return await asyncio.wait_for(self.try_acquire_or_renew(kube), timeout)
        except TimeoutError:
            log.warning("leader lease request timed out", extra={"fields": {"lease": self._lease_key()}})
        except ApiError as exc:
            log.warning("leader lease request failed", extra={"fields": {"lease": self._lease_key(),
                                                                          "error": str(exc)}})
        except Exception as exc:  # noqa: BLE001 - transport errors: try again next period
            log.warning("leader lease request failed", extra={"fields": {"lease": self._lease_key(),
                                                                          "error": repr(exc)}})
        return False

    def _lease_key(self) -> str:
        return f"{self.namespace}/{self.name}"

    # ---- the loops -------------------------------------------------------------------------------

    async def acquire(self) -> None:
        """Return once this replica holds the Lease; until then try every retry period (jittered)."""
        log.info("attempting to acquire leader lease", extra={"fields": {
            "lease": self._lease_key(), "identity": self.identity}})
        while True:
            if await self._try(self.renew_deadline):
                self.leading = True
                self.renewed_at = self.monotonic()
                log.info("successfully acquired lease", extra={"fields": {
                    "lease": self._lease_key(), "identity": self.identity}})
                return
            holder = self.holder
            if holder and holder != self._reported_holder:
                self._reported_holder = holder
                log.info("waiting for the leader lease: another replica is leading", extra={"fields": {
                    "lease": self._lease_key(), "leader": holder, "identity": self.identity}})
            await asyncio.sleep(self.retry_period * (1 + random.random() * JITTER))

    async def hold(self, kube: Kube | None = None) -> None:
        """Renew every retry period while leading; raise LeaderElectionLost once a renewal has not
        succeeded for the renew deadline (each try is cut off at that deadline, so a hung request
        cannot keep a deposed leader admitting). ``kube``: the renewal thread's connection."""
        while True:
            await asyncio.sleep(self.retry_period)
            while True:
                left = self.renewed_at + self.renew_deadline - self.monotonic()
                if left <= 0:
                    self.leading = False
                    log.error("leader election lost", extra={"fields": {
                        "lease": self._lease_key(), "identity": self.identity, "holder": self.holder}})
                    raise LeaderElectionLost(self._lease_key())
                attempt_started = self.monotonic()
                if await self._try(left, kube) and self.holder == self.identity:
                    self.renewed_at = attempt_started
                    break
                await asyncio.sleep(min(self.retry_period, max(0.0, left - (self.monotonic() - attempt_started))))

    def check_leading(self) -> None:
        """Before each of the controller's writes (``Kube.guarded``): raise LeaderElectionLost unless this
        replica leads and renewed the Lease within the renew deadline. ``hold`` finds the same, but only
        when the event loop gets to it: a loop held by a long pass (a relist, a scheduling pass) would
        otherwise send writes decided after another replica may have taken the Lease. client-go's
        elector has no such check (its callers' writes race the loss); the deadline is shorter than the
        lease duration, so these writes end before a standby can acquire it."""
        if not self.leading or self.monotonic() - self.renewed_at >= self.renew_deadline:
            raise LeaderElectionLost(self._lease_key())

    async def release(self) -> None:
        """Give the Lease up (empty holder, duration 1 s) if this replica still holds it, as client-go's
        ReleaseOnCancel: a standby takes over at its next try instead of after the lease duration."""
        if not self.leading or self.lease is None:
            return
        self.leading = False
        stamp = micro_time(self.wall())
        spec = {**(self.lease.get("spec") or {}), "holderIdentity": "", "leaseDurationSeconds": 1,
                "acquireTime": stamp, "renewTime": stamp}
        try:
            await asyncio.wait_for(self.kube.replace(r.LEASE, {**self.lease, "spec": spec}), self.renew_deadline)
        except Exception as exc:  # noqa: BLE001 - a conflict means it was no longer ours anyway
            log.warning("leader lease not released", extra={"fields": {"lease": self._lease_key(),
                                                                        "error": str(exc)}})
            return
        log.info("released leader lease", extra={"fields": {"lease": self._lease_key(), "identity": self.identity}})


class RenewalThread:
    """``elector.hold`` on a thread of its own, with its own event loop and the connection ``connect``
    makes there (an aiohttp session belongs to the loop it was made on): the controller's loop may be
    held by a long pass without the Lease going unrenewed. ``done`` is a future of the controller's
    loop, set when holding ends (LeaderElectionLost, or None once stopped); the elector's ``leading`` and
    ``renewed_at``, which ``check_leading`` reads on the controller's loop, are plain attributes the
    thread assigns. client-go's counterpart: the elector's renew goroutine."""

    def __init__(self, elector: LeaderElector, connect: Callable[[], Kube]) -> None:
        self.elector = elector
        self.connect = connect
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._caller = asyncio.get_running_loop()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name="leader-renewal", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._started.wait()

    def _main(self) -> None:
        outcome: BaseException | None = None
        try:
            asyncio.run(self._hold())
        except BaseException as exc:  # noqa: BLE001 - handed to the controller's loop, which raises it
            outcome = exc
        self._caller.call_soon_threadsafe(self._finish, outcome)

    def _finish(self, outcome: BaseException | None) -> None:
        if self.done.done():
            return
        if outcome is None or isinstance(outcome, (asyncio.CancelledError, concurrent.futures.CancelledError)):
            self.done.set_result(None)
        else:
            self.done.set_exception(outcome)

    async def _hold(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._started.set()
        kube = self.connect()
        try:
            await self.elector.hold(kube)
        finally:
            with contextlib.suppress(Exception):
                await kube.close()

    async def stop(self) -> None:
        """Cancel the renewals and wait for the thread (off the controller's loop)."""
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # its loop has ended already
                self._loop.call_soon_threadsafe(self._task.cancel)
        await asyncio.to_thread(self._thread.join)


async def run_as_leader(elector: LeaderElector, work: Callable[[], Awaitable[None]],
                        connect: Callable[[], Kube] | None = None) -> None:
    """Wait for the Lease, then run `work` while renewing it (on a ``RenewalThread`` with a connection
    from ``connect``; on this loop without one). Raise LeaderElectionLost (after `work` is cancelled)
    when renewing fails; on cancellation, or when `work` ends, stop it and release the Lease."""
    await elector.acquire()
    running = asyncio.ensure_future(work())
    renewal = RenewalThread(elector, connect) if connect is not None else None
    if renewal is not None:
        renewal.start()
        holding: asyncio.Future[None] = renewal.done
    else:
        holding = asyncio.ensure_future(elector.hold())
    try:
        await asyncio.wait({running, holding}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if renewal is not None:
            await renewal.stop()
        for task in (running, holding):
            task.cancel()
        for task in (running, holding):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        lost = holding.done() and not holding.cancelled() and holding.exception() is not None
        if not lost:  # nothing of ours writes any more: let a standby take over at once
            await elector.release()
    for task in (holding, running):
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
