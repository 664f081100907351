"""The dashboard in a real browser: headless Chromium (Debian's package) driven by Playwright against
`pykueue dashboard` on the tier 2 cluster, with the controller admitting. The browser opens the URL the
command printed (its token becomes a cookie); without it, under a foreign Host, or posted from another
site, nothing is served. One page stays open for the whole story, so every change it shows arrived over
the live feed, never by a reload. Then the same pages served by the controller (`--dashboard-port`)
behind its delegated authentication.

The screenshot goes to the test's directory; with PYKUEUE_UPDATE_SCREENSHOTS=1 it replaces
docs/images/dashboard.png, which the README shows."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykueue.dashboard.view import contrast
from pykueue.devcluster.cluster import free_port
from tests.e2e.callers import https_get, service_account_token, status_reason
from tests.e2e.conftest import REPO, Kueue, condition, eventually
from tests.e2e.objects import PLAIN_FLAVOR, cluster_queue, job, local_queue, priority_classes

pytestmark = pytest.mark.e2e
SCREENSHOT = REPO / "docs" / "images" / "dashboard.png"
WAIT_MS = 90_000  # generous: a shared 2-core machine


def rgb(css: str) -> str:
    """``rgb(31, 119, 180)`` as ``#1f77b4``."""
    r, g, b = (int(v) for v in re.findall(r"\d+", css)[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def chromium() -> str:
    """The system's Chromium (Playwright's own browser download needs the internet, which CI lacks)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no chromium on PATH: install Debian's package (apt-get install -y chromium), as .ci/run does")


@pytest.fixture
def dashboard(kueue: Kueue, tmp_path: Path) -> Iterator[str]:
    """`pykueue dashboard` on a free port; the URL it printed (``http://127.0.0.1:PORT/?token=...``)."""
    log = tmp_path / "dashboard.log"
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "pykueue.cli", "dashboard", "--kubeconfig",
                                    str(kueue.cluster.kubeconfig), "--listen", "127.0.0.1:0"],
                                   stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        line = eventually(lambda: re.search(r"serving (http://127\.0\.0\.1:\d+/\?token=[\w-]{40,})", log.read_text())
                          or process.poll() is not None, 60, what="dashboard serving")
        assert process.poll() is None, log.read_text()
        yield line.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)
        print("\n--- dashboard log ---\n" + log.read_text()[-3000:])


def refusals(printed: str) -> str:
    """The printed URL without its token, the cookie sent outside the session path it is scoped to, a
    foreign Host (DNS rebinding), and a POST from another site that carries the cookie are all
    refused. Returns the session's URL (where the token's redirect goes)."""
    from http.client import HTTPConnection
    from urllib.parse import urlsplit

    base = printed.split("?")[0]
    token = printed.split("token=")[1]
    port = base.rsplit(":", 1)[1].strip("/")
    connection = HTTPConnection("127.0.0.1", int(port), timeout=30)
    connection.request("GET", urlsplit(printed).path + "?" + urlsplit(printed).query)
    answer = connection.getresponse()
    assert answer.status == 303, answer.status
    root = answer.getheader("Location") or ""
    assert re.fullmatch(r"/s/[\w-]{22,}/", root) and f"Path={root}" in (answer.getheader("Set-Cookie") or "")
    connection.close()
    session = base.rstrip("/") + root
    cookie = f"pykueue-dashboard-{port}={token}"
    assert http(base) == 401 and http(session) == 401
    assert http(base, {"Cookie": cookie}) == 401  # the cookie opens nothing outside its path
    assert http(session, {"Cookie": cookie}) == 200
    assert http(session, {"Cookie": cookie, "Host": f"rebound.example:{port}"}) == 403
    assert http(f"{session}what-if", {"Cookie": cookie, "Origin": "http://evil.example"}, b"manifest=kind%3A+Job") == 403
    assert http(f"{session}what-if", {"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, b"manifest=kind%3A+Job") == 403
    return session


def http(url: str, headers: dict[str, str] | None = None, form: bytes | None = None) -> int:
    import urllib.error
    import urllib.request

    extra = {"Content-Type": "application/x-www-form-urlencoded"} if form is not None else {}
    request = urllib.request.Request(url, data=form, headers={**(headers or {}), **extra})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - a URL the test built
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_pending_then_admitted_then_preempted_without_a_reload(kueue: Kueue, ns: str, dashboard: str,
                                                                 tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    printed, dashboard = dashboard, refusals(dashboard)

    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(priority_classes(ns))
    kueue.apply(cluster_queue(ns, "1", preemption="{withinClusterQueue: LowerPriority}"))
    kueue.apply(local_queue(ns, ns))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            stranger = browser.new_page()  # no token, no cookie: refused
            assert (response := stranger.goto(dashboard)) is not None and response.status == 401
            stranger.close()
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            opened = page.goto(printed)  # the cookie, then the session's URL, without the token
            assert opened is not None and opened.status == 200 and page.url == dashboard
            page.goto(f"{dashboard}queues/{ns}")
            expect(page.locator("h2")).to_have_text(f"ClusterQueue {ns}")
            page.evaluate("window.__sameDocument = true")  # gone if the page ever reloads

            # A Job over the queue's 1 cpu: pending, with the reason and message Kueue wrote on its Workload.
            kueue.apply(job("low", ns, "3", priority_class=f"{ns}-low"))
            waiting = eventually(lambda: (w := kueue.workload_of("low", ns))
                                 and (c := condition(w, "QuotaReserved")) and c["status"] == "False" and w,
                                 90, what="low's QuotaReserved=False")
            low = f"{ns}/{waiting['metadata']['name']}"
            reason = condition(waiting, "QuotaReserved")
            row = page.locator(f'tr[data-workload="{low}"]')
            expect(row).to_have_attribute("data-state", "pending", timeout=WAIT_MS)
            expect(row).to_contain_text(reason["reason"], timeout=WAIT_MS)
            expect(row).to_contain_text(reason["message"], timeout=WAIT_MS)  # Kueue's words, as written
            expect(row.locator("td").first).to_have_text("0")  # position 0 in the ClusterQueue

            # Quota added: the same page shows it admitted, and the bar fills.
            kueue.cluster.kubectl("patch", "clusterqueue", ns, "--type=json", "-p",
                                  '[{"op":"replace","path":"/spec/resourceGroups/0/flavors/0/resources/0/'
                                  'nominalQuota","value":"4"}]')
            expect(row).to_have_attribute("data-state", "admitted", timeout=WAIT_MS)
            expect(page.locator('.bar[aria-label^="plain cpu: 3 of 4 used"]')).to_have_count(1, timeout=WAIT_MS)

            # A higher-priority Job preempts it: both rows say so.
            kueue.apply(job("high", ns, "3", priority_class=f"{ns}-high"))
            high_wl = eventually(lambda: kueue.workload_of("high", ns), 60, what="high's Workload")
            high = f"{ns}/{high_wl['metadata']['name']}"
            high_row = page.locator(f'tr[data-workload="{high}"]')
            expect(high_row).to_have_attribute("data-state", "admitted", timeout=WAIT_MS)
            expect(high_row).to_contain_text(f"preempted {low}", timeout=WAIT_MS)
            expect(row).to_have_attribute("data-state", "pending", timeout=WAIT_MS)
            expect(row).to_contain_text(f"preempted by {high}", timeout=WAIT_MS)
            assert page.evaluate("window.__sameDocument === true"), "the page reloaded"
            assert int(page.locator("#live").get_attribute("data-version") or 0) >= 3  # swapped live, 3+ times

            # The victim's own page: Kueue's history and the engine's answer.
            page.click(f'tr[data-workload="{high}"] >> text="{low}"')
            expect(page.locator("h2")).to_have_text(f"Workload {low}")
            expect(page.locator("table.timeline")).to_contain_text("Preempted")
            expect(page.locator("section").first).to_contain_text("Position 0 of 1 in its ClusterQueue")
            expect(page.locator("section").first).to_contain_text("more cpu free in flavor plain")
            expect(page.locator("table.owner")).to_contain_text("suspended")

            # The what-if box: a 1 cpu Job fits beside high (3 of 4) now.
            page.goto(f"{dashboard}what-if")
            page.get_by_label("A Job (or Workload) manifest").fill(job("maybe", ns, "1"))
            page.get_by_role("button", name="Where would it be admitted?").click()
            expect(page.locator(".verdict")).to_contain_text(f"Admitted now in ClusterQueue {ns}")
            assert kueue.workload_of("maybe", ns) is None  # read-only: nothing was created

            unlabelled = page.evaluate("""[...document.querySelectorAll('input,textarea,select')]
                .filter(c => !(c.labels && c.labels.length)).length""")
            assert unlabelled == 0

            page.goto(dashboard)
            expect(page.locator(f"#cq-{ns}")).to_contain_text("preempted by")
            # the chips as the browser paints them: text against the queue colour at 4.5:1 or more
            painted = page.evaluate("""[...document.querySelectorAll('.chip')].map(c => {
                const s = getComputedStyle(c); return [s.backgroundColor, s.color]; })""")
            assert painted and all(contrast(rgb(bg), rgb(fg)) >= 4.5 for bg, fg in painted), painted
            page.goto(f"{dashboard}queues/{ns}")
            expect(page.locator("tr[data-workload]")).to_have_count(2)
            shot = SCREENSHOT if os.environ.get("PYKUEUE_UPDATE_SCREENSHOTS") == "1" else tmp_path / SCREENSHOT.name
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()


def test_the_controller_serves_it_behind_its_authentication(kueue: Kueue, ns: str) -> None:
    """`--dashboard-port`: HTTPS; no credentials 401, a token without the role 403 (in the API server's
    words), a token bound to a role with the non-resource URLs /dashboard and /dashboard/* sees the
    pages, as does the admin's client certificate."""
    cluster = kueue.cluster
    port = free_port()
    viewers = f"{ns[:40]}-viewers"
    cluster.kubectl("create", "clusterrole", viewers, "--verb=get", "--non-resource-url=/dashboard",
                    "--non-resource-url=/dashboard/*")
    token = service_account_token(cluster, ns, "viewer", cluster_role=viewers)
    other = service_account_token(cluster, ns, "nobody")
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "1"))
    # a controller of its own, with the dashboard's port; the shared one is stopped meanwhile, since two
    # controllers without leader election would both admit
    kueue.stop()
    own = Kueue(cluster, kueue.log.with_name("controller-dashboard.log"),
                args=(f"--dashboard-port={port}", "--dashboard-host=127.0.0.1"))
    try:
        own.start()
        url = f"https://127.0.0.1:{port}"
        status, body = https_get(f"{url}/")
        assert (status, status_reason(body)) == (401, "Unauthorized")
        status, body = https_get(f"{url}/queues/{ns}", token=other)
        assert (status, status_reason(body)) == (403, "Forbidden")
        assert json.loads(body)["message"] == (
            f'forbidden: User "system:serviceaccount:{ns}:nobody" cannot get path "/dashboard/queues/{ns}"')
        page = eventually(lambda: (r := https_get(f"{url}/queues/{ns}", token=token))[0] == 200
                          and f"<h2>ClusterQueue {ns}</h2>" in r[1] and r, 60, what="the queue page, listed")
        assert 'aria-label="plain cpu: 0 of 1 used"' in page[1]
        pki = cluster.directory / "pki"
        status, body = https_get(f"{url}/", cert=(pki / "admin.crt", pki / "admin.key"))
        assert status == 200 and f'id="cq-{ns}"' in body
    finally:
        own.stop()
        cluster.kubectl("delete", "clusterrolebinding", f"{ns}-viewer", check=False)
        cluster.kubectl("delete", "clusterrole", viewers, check=False)
        kueue.start()


def pending_workloads(ns: str, count: int) -> list[dict]:
    """``count`` Workloads of 1 cpu each in LocalQueue lq: enough live objects that one engine answer
    takes a noticeable time (tens of milliseconds or more on a shared machine)."""
    return [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
             "metadata": {"name": f"w{i:04d}", "namespace": ns},
             "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                 "restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
            for i in range(count)]


def test_a_burst_of_dashboard_requests_never_stalls_the_controller(kueue: Kueue, ns: str) -> None:
    """The dashboard served by an elected controller, 300 pending Workloads: 50 requests at once for one
    workload's page, each with its own ``?x=N``, then 20 different what-if pastes at once (over kept-alive
    connections). Throughout, /healthz answers within 1 s every time and the controller keeps renewing
    its Lease (every 2 s)."""
    import http.client
    import ssl
    import threading
    import time
    import urllib.parse
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    from pykueue.controller.runtime.leader import LEASE_NAME as LEASE

    cluster = kueue.cluster
    kueue.apply(PLAIN_FLAVOR)
    kueue.apply(cluster_queue(ns, "1"))
    kueue.apply(local_queue(ns, ns))
    kueue.apply(pending_workloads(ns, 300))
    port, probe = free_port(), free_port()
    # a controller of its own, with the dashboard's port; the shared one is stopped meanwhile, since two
    # controllers without leader election would both admit
    kueue.stop()
    own = Kueue(cluster, kueue.log.with_name("controller-burst.log"),
                args=(f"--dashboard-port={port}", "--dashboard-host=127.0.0.1",
                      f"--health-probe-bind-address=127.0.0.1:{probe}", "--leader-elect",
                      f"--leader-election-namespace={ns}"))
    pki = cluster.directory / "pki"
    context = ssl._create_unverified_context()  # noqa: S323 - the controller's self-signed certificate
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    local = threading.local()  # one kept-alive connection per thread

    def call(path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        if getattr(local, "connection", None) is None:
            local.connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=60)
        body = None if form is None else urllib.parse.urlencode(form)
        headers = {} if form is None else {"Content-Type": "application/x-www-form-urlencoded"}
        local.connection.request("GET" if form is None else "POST", path, body=body, headers=headers)
        response = local.connection.getresponse()
        return response.status, response.read().decode()

    connected = threading.Barrier(50)

    def connect(_: int) -> int:
        """Each of the pool's threads opens its connection before the burst: 50 TLS handshakes at once
        cost the serving loop about as much on a busy 2-core machine, which the server bounds (its
        connection caps) are for; what is measured here is the pages' own work."""
        status, _ = call("/what-if")
        connected.wait(60)
        return status

    latencies: list[float] = []
    renewals: set[str] = set()
    done = threading.Event()

    def probing() -> None:
        while not done.is_set():
            started = time.monotonic()
            with urllib.request.urlopen(f"http://127.0.0.1:{probe}/healthz", timeout=10) as response:  # noqa: S310
                assert response.read() == b"ok"
            latencies.append(time.monotonic() - started)
            time.sleep(0.1)

    def leasing() -> None:
        while not done.is_set():
            spec = (kueue.get("lease.coordination.k8s.io", LEASE, ns) or {}).get("spec") or {}
            renewals.add(str(spec.get("renewTime")))
            time.sleep(0.5)

    try:
        own.start()
        page = f"/workloads/{ns}/w0299"
        eventually(lambda: (r := call(page))[0] == 200 and "Position " in r[1], 90, what="w0299's page, listed")
        watchers = [threading.Thread(target=probing), threading.Thread(target=leasing)]
        with ThreadPoolExecutor(50) as pool:
            assert set(pool.map(connect, range(50))) == {200}
            for thread in watchers:
                thread.start()
            time.sleep(1.0)
            burst_started = len(renewals)
            pages = list(pool.map(lambda n: call(f"{page}?x={n}"), range(50)))
            pastes = list(pool.map(lambda n: call("/what-if", {"manifest": job(f"maybe-{n}", ns, "1")}), range(20)))
            time.sleep(4.5)  # two more renewals at least
        done.set()
        for thread in watchers:
            thread.join(timeout=30)
        print(f"/healthz: {len(latencies)} probes, slowest {sorted(latencies)[-5:]}; renewals seen {len(renewals)}")
        assert latencies and max(latencies) < 1.0, sorted(latencies)[-5:]
        assert all(status == 200 and "Position " in text for status, text in pages), {s for s, _ in pages}
        assert {status for status, _ in pastes} <= {200, 503}, [t for s, t in pastes if s not in (200, 503)]
        assert any(status == 200 and "verdict" in text for status, text in pastes)
        assert len(renewals) >= burst_started + 2, renewals  # renewed through the burst and after it
        assert b"leader election lost" not in own.log.read_bytes()
    finally:
        done.set()
        own.stop()
        kueue.start()
