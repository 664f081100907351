"""`pykueue dashboard` is reachable only by whoever holds the URL it printed: the token is exchanged for
a SameSite=Strict, HttpOnly cookie; foreign Host values (DNS rebinding) and cross-site POSTs are refused;
every response, of either front end, carries the security headers."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pykueue.dashboard.guard import Guard
from pykueue.dashboard.server import Dashboard
from pykueue.dashboard.state import Hub
from tests.dashboard.objects import NOW, job, live

TOKEN = "t0ken-of-this-start"


def guarded(check, listen: str = "127.0.0.1") -> None:
    """Run ``check(client, guard)`` against the guarded dashboard on loopback."""
    async def main() -> None:
        guard = Guard(listen, token=TOKEN)
        server = TestServer(Dashboard(live, Hub(), clock=lambda: NOW).app((guard.middleware,)), host="127.0.0.1")
        async with TestClient(server) as client:
            guard.port = server.port
            await check(client, guard)
    asyncio.run(main())


def cookie(guard: Guard, value: str = TOKEN) -> dict[str, str]:
    return {"Cookie": f"{guard.cookie}={value}"}


def test_the_printed_url_sets_the_cookie_and_drops_the_token() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        assert guard.url("127.0.0.1") == f"http://127.0.0.1:{guard.port}/?token={TOKEN}"
        resp = await client.get(f"/queues/solo?page=0&token={TOKEN}", allow_redirects=False)
        assert (resp.status, resp.headers["Location"]) == (303, "/queues/solo?page=0")
        set_cookie = resp.headers["Set-Cookie"]
        # named for its port: a browser sends a host's cookies to every port of it
        assert guard.cookie == f"pykueue-dashboard-{guard.port}"
        assert set_cookie.startswith(f"{guard.cookie}={TOKEN};")
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {part.strip() for part in set_cookie.split(";")}
        page = await client.get("/queues/solo?page=0", headers=cookie(guard))
        assert page.status == 200 and "<h2>ClusterQueue solo</h2>" in await page.text()
    guarded(check)


def test_without_the_token_or_with_another_nothing_is_served() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        for path in ("/", "/queues/solo", "/events", "/what-if"):
            resp = await client.get(path)
            assert resp.status == 401, path
            assert await resp.text() == "open the URL pykueue dashboard printed (with its token)\n"
        assert (await client.get("/", headers=cookie(guard, "guessed"))).status == 401
        assert (await client.get("/?token=guessed", allow_redirects=False)).status == 403
        other = Guard("127.0.0.1", guard.port)  # another start: another token
        assert other.token != guard.token and len(other.token) >= 40
        assert (await client.post("/what-if", data={"manifest": job("x", "spare")})).status == 401
    guarded(check)


def test_only_the_cookie_named_for_its_own_port_lets_a_browser_in() -> None:
    """A browser sends every cookie of 127.0.0.1 to each of its ports: another dashboard's cookie (even
    holding this one's token), or one under another name, is not this dashboard's; its own is, beside
    the others a browser sends along."""
    async def check(client: TestClient, guard: Guard) -> None:
        for name in (f"pykueue-dashboard-{guard.port + 1}", "pykueue-dashboard", "token", f"pykueue-token-{guard.port}"):
            resp = await client.get("/", headers={"Cookie": f"{name}={TOKEN}"})
            assert resp.status == 401, name
        both = f"pykueue-dashboard-{guard.port + 1}=other-token; {guard.cookie}={TOKEN}"
        assert (await client.get("/", headers={"Cookie": both})).status == 200
    guarded(check)


@pytest.mark.parametrize(("host", "status"), [
    ("evil.example:{port}", 403), ("evil.example", 403), ("127.0.0.1.nip.io:{port}", 403),
    ("127.0.0.1:1", 403), ("192.168.1.5:{port}", 403), ("localhost:{port}", 200), ("LOCALHOST:{port}", 200),
    ("[::1]:{port}", 200), ("127.0.0.1:{port}", 200),
])
def test_only_loopback_host_values_are_served(host: str, status: int) -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        resp = await client.get("/", headers={"Host": host.format(port=guard.port), **cookie(guard)})
        assert resp.status == status
        if status == 403:
            assert "is not served" in await resp.text()
    guarded(check)


def test_listening_on_every_address_serves_address_literals_but_no_names() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        for host, status in (("192.168.1.5", 200), ("[fd00::5]", 200), ("fd00::5", 403), ("node7.example", 403)):
            resp = await client.get("/", headers={"Host": f"{host}:{guard.port}", **cookie(guard)})
            assert resp.status == status, host
    guarded(check, listen="0.0.0.0")


def test_a_post_from_another_site_is_refused() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        form = {"manifest": job("x", "spare")}
        origin = f"http://127.0.0.1:{guard.port}"
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"}, {"Origin": "null"},
                        {"Origin": f"http://localhost:{guard.port}"}):
            resp = await client.post("/what-if", data=form, headers={**cookie(guard), **headers})
            assert resp.status == 403, headers
            assert await resp.text() == "a request from another site is refused\n"
        # what Chromium sends for the page's own form (Origin is "null" under some referrer policies)
        for headers in ({"Origin": origin, "Sec-Fetch-Site": "same-origin"}, {"Origin": "null", "Sec-Fetch-Site":
                        "same-origin"}, {}):
            resp = await client.post("/what-if", data=form, headers={**cookie(guard), **headers})
            assert resp.status == 200 and "Admitted now" in await resp.text(), headers
    guarded(check)


def test_every_response_carries_the_security_headers() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        page = await client.get("/", headers=cookie(guard))
        refused = await client.get("/")
        missing = await client.get("/nothing-here", headers=cookie(guard))
        stream = await client.get("/events", headers=cookie(guard))
        assert [r.status for r in (page, refused, missing, stream)] == [200, 401, 404, 200]
        for resp in (page, refused, missing, stream):
            assert resp.headers["X-Frame-Options"] == "DENY"
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
        stream.close()
        # the policy lets the page's own inline script run, and nothing else
        script = re.search(r"<script>(.*?)</script>", await page.text(), re.S)
        assert script is not None
        digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
        policy = page.headers["Content-Security-Policy"]
        assert f"script-src 'sha256-{digest}';" in policy and "unsafe-eval" not in policy
        assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    guarded(check)
