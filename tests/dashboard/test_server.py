"""The dashboard's pages served over HTTP from hand-made objects (no cluster): what each page shows, the
live fragment, the server-sent events, escaping, and accessibility basics (every form control labelled,
every queue colour against its text at WCAG AA's 4.5:1 or more)."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from pykueue.dashboard import view
from pykueue.dashboard.server import Dashboard
from pykueue.dashboard.state import Hub
from pykueue.sim.report_plot import PALETTE
from tests.dashboard import objects as o
from tests.dashboard.objects import NOW, job, live


class Page(HTMLParser):
    """The parts of a page the checks read: form controls, labels and the chips' colours."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.controls: list[dict[str, str | None]] = []
        self.labels: set[str] = set()
        self.chips: list[tuple[str, str]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("input", "textarea", "select") and a.get("type") != "hidden":
            self.controls.append(a)
        if tag == "label" and a.get("for"):
            self.labels.add(str(a["for"]))
        if "chip" in (a.get("class") or "").split():
            style = dict(part.split(":", 1) for part in (a.get("style") or "").split(";") if ":" in part)
            self.chips.append((style["background"], style["color"]))


def serve(objs: dict, check) -> None:
    """Run ``check(client, hub)`` against the dashboard over ``objs``."""
    async def main() -> None:
        hub = Hub(coalesce=0.01)
        dashboard = Dashboard(lambda: objs, hub, clock=lambda: NOW)
        async with TestClient(TestServer(dashboard.app())) as client:
            await check(client, hub)
    asyncio.run(main())


def test_the_overview_shows_each_queue_its_bars_and_workloads() -> None:
    async def check(client, hub) -> None:
        resp = await client.get("/")
        text = await resp.text()
        assert resp.status == 200 and text.startswith("<!DOCTYPE html>")
        assert 'aria-label="default cpu: 2 of 2 used"' in text  # solo: the admitted big holds all of it
        assert 'data-workload="team/small" data-state="pending"' in text
        assert "<span class=\"reason\">Pending</span>: waiting" in text
        assert text.count("<script>") == 1 and "src=" not in text  # nothing fetched from elsewhere
    serve(live(), check)


def test_the_fragment_is_the_live_part_alone() -> None:
    async def check(client, hub) -> None:
        text = await (await client.get("/queues/solo?fragment=1")).text()
        assert text.startswith("<h2>ClusterQueue solo</h2>") and "<html" not in text
    serve(live(), check)


def test_a_workload_page_has_the_engines_answer_its_timeline_and_owner() -> None:
    async def check(client, hub) -> None:
        text = await (await client.get("/workloads/team/small")).text()
        assert "Position 0 of 1 in its ClusterQueue" in text
        assert "<li>1 more cpu free in flavor default" in text
        assert "No owner: a Workload created directly." in text
        missing = await (await client.get("/workloads/team/gone")).text()
        assert "No such Workload" in missing
    serve(live(), check)


def test_the_what_if_box_answers_a_pasted_job_and_words_a_bad_one() -> None:
    async def check(client, hub) -> None:
        good = await (await client.post("/what-if", data={"manifest": job("new", "spare")})).text()
        assert "<strong>Admitted now</strong> in ClusterQueue empty (flavors cpu=default)" in good
        bad = await (await client.post("/what-if", data={"manifest": "kind: Pod"})).text()
        assert 'role="alert">kind &#x27;Pod&#x27;: paste a batch/v1 Job or a Workload' in bad
        empty = await (await client.post("/what-if", data={"manifest": "  "})).text()
        assert "paste a Job manifest first" in empty
        # the page's script asks for the live fragment when the state moves: nothing is live here, so
        # it gets nothing (the whole page again would be nested inside itself)
        assert await (await client.get("/what-if?fragment=1")).text() == ""
    serve(live(), check)


def test_a_bad_page_number_is_a_clear_400() -> None:
    async def check(client, hub) -> None:
        resp = await client.get("/queues/solo?page=two")
        assert (resp.status, await resp.text()) == (400, "page: not a number")
    serve(live(), check)


def test_text_from_the_cluster_is_escaped() -> None:
    objs = live()
    objs["workloads"]["team/small"]["status"]["conditions"][0]["message"] = "<script>alert(1)</script>"
    async def check(client, hub) -> None:
        text = await (await client.get("/")).text()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>alert" not in text
    serve(objs, check)


def test_events_tell_every_open_page_once_per_burst() -> None:
    async def check(client, hub) -> None:
        first, second = await client.get("/events"), await client.get("/events")
        for resp in (first, second):
            assert resp.headers["Content-Type"] == "text/event-stream"
            assert await resp.content.readuntil(b"\n\n") == b"retry: 2000\nevent: hello\ndata: 0\n\n"
        assert hub.subscribers == 2
        for _ in range(5):  # a burst: one message
            hub.changed()
        for resp in (first, second):
            assert await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 5) == b"data: 1\n\n"
        first.close()
        second.close()
    serve(live(), check)


def test_every_form_control_has_a_label() -> None:
    async def check(client, hub) -> None:
        for path in ("/what-if", "/"):
            page = Page(await (await client.get(path)).text())
            assert all(c.get("id") in page.labels for c in page.controls), path
        assert len(Page(await (await client.get("/what-if")).text()).controls) == 1  # the textarea
    serve(live(), check)


def test_every_queue_colour_reads_against_its_text_at_4_5_to_1() -> None:
    names = [f"cq-{i:02d}" for i in range(len(PALETTE))]  # every colour of the report's palette
    objs = o.objects(clusterqueues=[o.cluster_queue(n, None, "1") for n in names])
    async def check(client, hub) -> None:
        page = Page(await (await client.get("/")).text())
        assert len(page.chips) == len(PALETTE)
        assert {bg for bg, _ in page.chips} == set(PALETTE)
        ratios = [view.contrast(bg, fg) for bg, fg in page.chips]
        assert min(ratios) >= 4.5, min(ratios)
    serve(objs, check)


def test_body_text_colours_pass_too() -> None:
    from pykueue.dashboard.render import STYLE

    assert re.search(r"body\{[^}]*color:#1b1b1b;background:#fafafa", STYLE)
    assert view.contrast("#1b1b1b", "#fafafa") >= 4.5
    assert view.contrast("#555555", "#ffffff") >= 4.5  # .muted on the cards
    assert view.contrast("#0b4f8a", "#ffffff") >= 4.5  # links
    assert view.contrast("#ffffff", "#1f2d3d") >= 4.5  # the header


def test_a_page_is_rendered_once_per_state_however_many_pages_show_it() -> None:
    objs = live()
    reads = []

    def counted() -> dict:
        reads.append(1)
        return objs

    async def main() -> None:
        hub = Hub(coalesce=0.01)
        async with TestClient(TestServer(Dashboard(counted, hub, clock=lambda: NOW).app())) as client:
            for _ in range(3):
                await client.get("/?fragment=1")
            assert len(reads) == 1
            objs["workloads"]["team/small"]["status"]["conditions"][0]["message"] = "still waiting"
            hub.publish()
            text = await (await client.get("/?fragment=1")).text()
            assert len(reads) == 2 and "still waiting" in text
    asyncio.run(main())


def test_thousands_of_workloads_render_paged() -> None:
    objs = live()
    for i in range(1200):
        wl = o.workload(f"w{i:04d}", created=f"2026-01-01T00:03:{i % 60:02d}Z")
        objs["workloads"][f"team/w{i:04d}"] = wl

    async def check(client, hub) -> None:
        overview = await (await client.get("/")).text()
        assert overview.count('data-state="pending"') == 10  # the overview's first rows of the queue
        assert "all 1 holding quota and 1201 pending" in overview
        last = await (await client.get("/queues/solo?page=24")).text()
        assert "page 25 of 25" in last and 'rel="prev"' in last and 'rel="next"' not in last
        assert last.count('data-state="pending"') == 1201 - 24 * 50
    serve(objs, check)


def test_fair_shares_show_when_the_controller_reports_them() -> None:
    objs = o.objects(cohorts=[o.cohort("org")],
                     clusterqueues=[o.cluster_queue("a", "org", "2", share=250), o.cluster_queue("b", "org", "2")])
    objs["cohorts"]["org"]["status"] = {"fairSharing": {"weightedShare": 125}}

    async def check(client, hub) -> None:
        text = await (await client.get("/")).text()
        assert "<h3>Cohort org · fair share <strong>125</strong></h3>" in text
        assert text.count("fair share <strong>") == 2  # the cohort and queue a; b reports none
        fragment = await (await client.get("/?fragment=1")).text()
        assert "fair share <strong>250</strong>" in fragment
    serve(objs, check)
    without = live()

    async def none(client, hub) -> None:
        assert "fair share" not in await (await client.get("/")).text()
    serve(without, none)


def test_the_what_if_answer_names_its_victims() -> None:
    from pykueue.dashboard import render

    doc = {"state": "Admitted", "clusterQueue": "solo", "flavors": {"cpu": "default"}, "preempts": ["team/big"]}
    html = render.what_if_answer(doc, None, "/")
    assert '<p class="preempts">By preempting <a href="/workloads/team/big">team/big</a>.</p>' in html


def test_a_pod_groups_page_reads_its_pods_when_asked() -> None:
    objs = live()
    wl = objs["workloads"]["team/small"]
    wl["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": f"p{i}", "uid": f"u{i}"}
                                         for i in range(12)]
    asked: list[tuple[str, str]] = []

    async def pod(namespace: str, name: str) -> dict | None:
        asked.append((namespace, name))
        if name == "p1":
            return None  # deleted meanwhile, or refused
        return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace},
                "spec": {"nodeName": "plain-0", "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": "Pending"}}

    async def main() -> None:
        dashboard = Dashboard(lambda: objs, Hub(), clock=lambda: NOW, pod=pod)
        async with TestClient(TestServer(dashboard.app())) as client:
            text = await (await client.get("/workloads/team/small")).text()
            assert asked == [("team", f"p{i}") for i in range(10)]  # at most 10 read
            assert "<p>Pod p1 (not readable)</p>" in text and "<p>and 2 more</p>" in text
            assert text.count('<th scope="row">scheduling gates</th><td>kueue.x-k8s.io/admission</td>') == 9
            assert '<th scope="row">requests</th><td>c: cpu=1</td>' in text
    asyncio.run(main())


def crowded(count: int = 500) -> dict:
    """live() and ``count`` more pending workloads: an explain of some tens of milliseconds or more."""
    objs = live()
    for i in range(count):
        objs["workloads"][f"team/w{i:04d}"] = o.workload(f"w{i:04d}", created=f"2026-01-01T00:03:{i % 60:02d}Z")
    return objs


def test_a_query_the_page_does_not_read_is_the_same_page() -> None:
    """``?x=N`` used to be a new cache key, so a new explain each time."""
    objs = live()

    async def main() -> None:
        dashboard = Dashboard(lambda: objs, Hub(), clock=lambda: NOW)
        answered = []
        run = dashboard.offload.run

        async def counted(*args):
            answered.append(args[2])
            return await run(*args)
        dashboard.offload.run = counted  # type: ignore[method-assign]
        async with TestClient(TestServer(dashboard.app())) as client:
            for n in range(20):
                resp = await client.get(f"/workloads/team/small?x={n}&fragment={n % 2}")
                assert resp.status == 200 and "Position 0 of 1" in await resp.text()
            assert len(answered) == 1
            pages = [await (await client.get(f"/queues/solo?page={p}&x={p}")).text() for p in ("0", "00", "7", "-3")]
            assert len(set(pages)) == 1  # one page of workloads: every number past it is that page
            rendered = len(dashboard._rendered)
            for n in range(20):  # names nobody has: nothing rendered to keep, nothing computed
                missing = await (await client.get(f"/queues/nope-{n}")).text()
                assert f"<h2>ClusterQueue nope-{n}</h2><p>No such ClusterQueue" in missing
                assert "No such Workload" in await (await client.get(f"/workloads/team/nope-{n}")).text()
            assert len(dashboard._rendered) == rendered and answered == ["explain"]
    asyncio.run(main())


def test_a_burst_of_page_requests_never_stalls_the_event_loop() -> None:
    """The controller's loop also renews its lease and answers /healthz: while 50 requests for a
    workload's page (each with its own ``?x=N``) arrive at once, then 20 different what-if pastes, a
    /healthz served on the same loop answers within 1 s every time, and a 0.1 s ticker (the lease
    renewal's stand-in) never waits 1 s. The pages share one answer; the pastes past the engine's
    queue are refused at once with a clear 503."""
    objs = crowded()

    async def main() -> None:
        dashboard = Dashboard(lambda: objs, Hub(), clock=lambda: NOW)
        probes = web.Application()
        async def healthz(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        probes.router.add_get("/healthz", healthz)
        async with TestClient(TestServer(dashboard.app())) as client, \
                TestClient(TestServer(probes)) as health:
            loop = asyncio.get_running_loop()
            gaps: list[float] = []
            latencies: list[float] = []
            done = asyncio.Event()

            async def ticker() -> None:
                last = loop.time()
                while not done.is_set():
                    await asyncio.sleep(0.1)
                    gaps.append(loop.time() - last - 0.1)
                    last = loop.time()

            async def prober() -> None:
                while not done.is_set():
                    started = loop.time()
                    resp = await health.get("/healthz")
                    assert (resp.status, await resp.text()) == (200, "ok")
                    latencies.append(loop.time() - started)
                    await asyncio.sleep(0.05)

            async def page(n: int) -> tuple[int, str]:
                resp = await client.get(f"/workloads/team/small?x={n}")
                return resp.status, await resp.text()

            async def paste(n: int) -> tuple[int, str]:
                resp = await client.post("/what-if", data={"manifest": job(f"new-{n}", "spare")})
                return resp.status, await resp.text()

            background = [asyncio.create_task(ticker()), asyncio.create_task(prober())]
            await asyncio.sleep(0.3)
            pages = await asyncio.gather(*(page(n) for n in range(50)))
            pastes = await asyncio.gather(*(paste(n) for n in range(20)))
            done.set()
            await asyncio.gather(*background)
        assert latencies and max(latencies) < 1.0, max(latencies)
        assert gaps and max(gaps) < 1.0, max(gaps)
        assert all(status == 200 and "Position 0 of 501 " in text for status, text in pages), pages[0]
        assert {status for status, _ in pastes} <= {200, 503}
        assert any(status == 200 and "Admitted now" in text for status, text in pastes)
        refused = [text for status, text in pastes if status == 503]
        assert refused and set(refused) == {"the engine is busy answering other pages: try again shortly\n"}
    asyncio.run(main())
