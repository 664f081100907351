"""A supervised loop that keeps failing makes `/healthz` fail, naming it, so the kubelet restarts a
controller that is up but cannot do its work; a loop that has run fine for a while is healthy again.
The loops here fail on cue (events, not sleeps) and time is a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from pykueue.controller.observe.health import Probes
from pykueue.controller.runtime import supervise
from tests.controller.fakes import until


@pytest.fixture(autouse=True)
def no_loops_left() -> Iterator[None]:
    yield
    assert supervise.LOOPS == {}, "a test left a supervised loop registered"



class Scripted:
    """A loop body: each run waits for its cue (an event per run), then raises or, with
    `hold`, keeps running until cancelled."""

    def __init__(self, free_failures: int = 0) -> None:
        self.runs = 0
        self.free_failures = free_failures  # the first runs fail at once, without a cue
        self.started = asyncio.Event()
        self.cue = asyncio.Event()

    async def __call__(self) -> None:
        self.runs += 1
        if self.runs <= self.free_failures:
            raise RuntimeError(f"failure {self.runs}")
        self.started.set()
        await self.cue.wait()
        self.cue.clear()
        self.started.clear()
        raise RuntimeError(f"failure {self.runs}")


def failures_of(name: str) -> int:
    health = supervise.LOOPS.get(name)
    return health.failures if health else -1


def test_healthz_is_ok_with_no_loops_failing() -> None:
    assert Probes().healthz() == (200, b"ok", "text/plain; charset=utf-8")


def test_healthz_fails_naming_the_loop_on_its_fifth_failure_in_a_row() -> None:
    async def scenario() -> None:
        body = Scripted(free_failures=4)
        now = [0.0]
        task = asyncio.create_task(supervise.supervised("status-writer", body, base=0.0001, clock=lambda: now[0]))
        await asyncio.wait_for(body.started.wait(), 5)  # run 5 is running: 4 failures so far
        assert failures_of("status-writer") == 4
        assert Probes().healthz()[0] == 200
        body.cue.set()  # the fifth failure
        await until(lambda: failures_of("status-writer") == 5)
        status, text, _ = Probes().healthz()
        assert status == 500
        assert text == b"loop status-writer failing: 5 failures in a row (the controller's log has its errors)"
        assert b"RuntimeError" not in text and b"failure 5" not in text  # unauthenticated: no exception text
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert Probes().healthz()[0] == 200  # a loop no longer running is no longer reported

    asyncio.run(scenario())


def test_a_loop_that_has_run_fine_for_a_while_is_healthy_again_and_its_streak_starts_over() -> None:
    async def scenario() -> None:
        body = Scripted(free_failures=5)
        now = [100.0]
        task = asyncio.create_task(supervise.supervised("scheduler", body, base=0.0001, healthy_after=30.0,
                                                        clock=lambda: now[0]))
        await asyncio.wait_for(body.started.wait(), 5)  # run 6, started at 100.0 after 5 failures
        assert Probes().healthz()[0] == 500
        now[0] = 129.9
        assert Probes().healthz()[0] == 500  # not yet 30 s of running
        now[0] = 130.0
        assert Probes().healthz() == (200, b"ok", "text/plain; charset=utf-8")  # healthy while it runs on
        body.cue.set()  # then it fails once: a new streak of one, not the sixth in a row
        await until(lambda: failures_of("scheduler") != 5)
        assert failures_of("scheduler") == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_a_loop_that_returns_counts_as_a_failure() -> None:
    async def scenario() -> None:
        runs = 0

        async def returns() -> None:
            nonlocal runs
            runs += 1
            if runs > 5:
                await asyncio.Event().wait()

        task = asyncio.create_task(supervise.supervised("resync", returns, base=0.0001, clock=lambda: 0.0))
        await until(lambda: runs == 6)
        status, text, _ = Probes().healthz()
        assert (status, text) == (500, b"loop resync failing: 5 failures in a row (the controller's log has its "
                                       b"errors)")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_a_loop_started_again_under_the_same_name_replaces_the_old_record() -> None:
    """A new leader term starts its loops afresh: the old term's failures are not the new one's."""
    async def scenario() -> None:
        old = Scripted(free_failures=5)
        first = asyncio.create_task(supervise.supervised("jobs", old, base=0.0001, clock=lambda: 0.0))
        await asyncio.wait_for(old.started.wait(), 5)
        assert failures_of("jobs") == 5
        second = asyncio.create_task(supervise.supervised("jobs", Scripted(), base=0.0001, clock=lambda: 0.0))
        await until(lambda: failures_of("jobs") == 0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert failures_of("jobs") == 0  # the old task's end does not remove the new record
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second

    asyncio.run(scenario())


def test_the_backoff_doubles_from_its_base_up_to_the_cap() -> None:
    assert [supervise.retry_delay(n) for n in range(8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert supervise.retry_delay(2, base=0.1) == pytest.approx(0.4)


def test_a_probe_that_raises_answers_500_without_the_exception_text(caplog) -> None:
    """The probe port is unauthenticated: a failing readiness check (here, one that raises with a
    secret in its message) answers a fixed text over the wire; the log has the error."""
    from urllib.error import HTTPError
    from urllib.request import urlopen

    from pykueue.controller.observe.health import Server
    from pykueue.controller.serving import limits as serving

    probes = Probes()

    def broken() -> bool:
        raise RuntimeError("token=s3cr3t at /var/run/secrets")

    probes.ready = broken

    async def scenario() -> tuple[int, bytes]:
        server = Server("health", "127.0.0.1:0", {"/healthz": probes.healthz, "/readyz": probes.readyz},
                        bounds=serving.PROBES)
        await server.start()
        try:
            def get() -> tuple[int, bytes]:
                try:
                    with urlopen(f"http://127.0.0.1:{server.port}/readyz", timeout=10) as r:
                        return r.status, r.read()
                except HTTPError as err:
                    return err.code, err.read()
            return await asyncio.to_thread(get)
        finally:
            await server.stop()

    status, body = asyncio.run(scenario())
    assert status == 500 and body == b"internal error; the controller's log has the details"
    assert any("s3cr3t" in r.fields.get("error", "") for r in caplog.records if hasattr(r, "fields"))
