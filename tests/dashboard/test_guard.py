"""`pykueue dashboard` is reachable only by whoever holds the URL it printed: the token is exchanged for
a SameSite=Strict, HttpOnly cookie scoped to a random session path, under which every page is; foreign Host values (DNS rebinding) and cross-site POSTs are refused;
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
SESSION = "sess10n"
ROOT = f"/s/{SESSION}/"


def guarded(check, listen: str = "127.0.0.1") -> None:
    """Run ``check(client, guard)`` against the guarded dashboard on loopback."""
    async def main() -> None:
        guard = Guard(listen, token=TOKEN, session=SESSION)
        pages = Dashboard(live, Hub(), clock=lambda: NOW, root=guard.root).app()
        server = TestServer(guard.app(pages), host="127.0.0.1")
        async with TestClient(server) as client:
            guard.port = server.port
            await check(client, guard)
    asyncio.run(main())


def cookie(guard: Guard, value: str = TOKEN) -> dict[str, str]:
    return {"Cookie": f"{guard.cookie}={value}"}


def test_the_printed_url_sets_the_cookie_and_drops_the_token() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        assert guard.url("127.0.0.1") == f"http://127.0.0.1:{guard.port}/?token={TOKEN}"
        resp = await client.get(f"/?token={TOKEN}", allow_redirects=False)
        assert (resp.status, resp.headers["Location"]) == (303, ROOT)
        set_cookie = resp.headers["Set-Cookie"]
        # named for its port, scoped to the session's path: a browser sends a host's cookies to every
        # port of it, but only to paths under the cookie's
        assert guard.cookie == f"pykueue-dashboard-{guard.port}"
        assert set_cookie.startswith(f"{guard.cookie}={TOKEN};")
        assert {"HttpOnly", "SameSite=Strict", f"Path={ROOT}"} <= {part.strip() for part in set_cookie.split(";")}
        # a page asked with the token (a link someone shared, an older start's session) lands in this session
        for asked in (f"/queues/solo?page=0&token={TOKEN}", f"{ROOT}queues/solo?page=0&token={TOKEN}",
                      f"/s/older/queues/solo?token={TOKEN}&page=0"):
            resp = await client.get(asked, allow_redirects=False)
            assert (resp.status, resp.headers["Location"]) == (303, f"{ROOT}queues/solo?page=0"), asked
        page = await client.get(f"{ROOT}queues/solo?page=0", headers=cookie(guard))
        text = await page.text()
        assert page.status == 200 and "<h2>ClusterQueue solo</h2>" in text
        assert f'data-root="{ROOT}"' in text and f'href="{ROOT}what-if"' in text  # links stay in the session
    guarded(check)


def test_the_cookie_opens_nothing_outside_the_session_path() -> None:
    """The pages exist only under the session path: the right cookie sent to ``/`` or to another
    session's path (what a replayed cookie would try) is 401, so a cookie a browser leaked to another
    server could not be used without also knowing the path, which only this server's pages name."""
    async def check(client: TestClient, guard: Guard) -> None:
        for path in ("/", "/queues/solo", "/events", "/s/other/", "/s/", f"/x{ROOT}"):
            resp = await client.get(path, headers=cookie(guard))
            assert resp.status == 401, path
        assert (await client.get(ROOT, headers=cookie(guard))).status == 200
        assert Guard("127.0.0.1").root != Guard("127.0.0.1").root  # new at each start
        assert len(Guard("127.0.0.1").root) >= len("/s//") + 22
    guarded(check)


def test_without_the_token_or_with_another_nothing_is_served() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        for path in (ROOT, f"{ROOT}queues/solo", f"{ROOT}events", f"{ROOT}what-if", "/"):
            resp = await client.get(path)
            assert resp.status == 401, path
            assert await resp.text() == "open the URL pykueue dashboard printed (with its token)\n"
        assert (await client.get(ROOT, headers=cookie(guard, "guessed"))).status == 401
        assert (await client.get("/?token=guessed", allow_redirects=False)).status == 403
        other = Guard("127.0.0.1", guard.port)  # another start: another token
        assert other.token != guard.token and len(other.token) >= 40
        assert (await client.post(f"{ROOT}what-if", data={"manifest": job("x", "spare")})).status == 401
    guarded(check)


def test_only_the_cookie_named_for_its_own_port_lets_a_browser_in() -> None:
    """A browser sends every cookie of 127.0.0.1 to each of its ports: another dashboard's cookie (even
    holding this one's token), or one under another name, is not this dashboard's; its own is, beside
    the others a browser sends along."""
    async def check(client: TestClient, guard: Guard) -> None:
        for name in (f"pykueue-dashboard-{guard.port + 1}", "pykueue-dashboard", "token", f"pykueue-token-{guard.port}"):
            resp = await client.get(ROOT, headers={"Cookie": f"{name}={TOKEN}"})
            assert resp.status == 401, name
        both = f"pykueue-dashboard-{guard.port + 1}=other-token; {guard.cookie}={TOKEN}"
        assert (await client.get(ROOT, headers={"Cookie": both})).status == 200
    guarded(check)


@pytest.mark.parametrize(("host", "status"), [
    ("evil.example:{port}", 403), ("evil.example", 403), ("127.0.0.1.nip.io:{port}", 403),
    ("127.0.0.1:1", 403), ("192.168.1.5:{port}", 403), ("localhost:{port}", 200), ("LOCALHOST:{port}", 200),
    ("[::1]:{port}", 200), ("127.0.0.1:{port}", 200),
])
def test_only_loopback_host_values_are_served(host: str, status: int) -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        resp = await client.get(ROOT, headers={"Host": host.format(port=guard.port), **cookie(guard)})
        assert resp.status == status
        if status == 403:
            assert "is not served" in await resp.text()
    guarded(check)


def test_listening_on_every_address_serves_address_literals_but_no_names() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        for host, status in (("192.168.1.5", 200), ("[fd00::5]", 200), ("fd00::5", 403), ("node7.example", 403)):
            resp = await client.get(ROOT, headers={"Host": f"{host}:{guard.port}", **cookie(guard)})
            assert resp.status == status, host
    guarded(check, listen="0.0.0.0")


def test_a_post_from_another_site_is_refused() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        form = {"manifest": job("x", "spare")}
        origin = f"http://127.0.0.1:{guard.port}"
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"}, {"Origin": "null"},
                        {"Origin": f"http://localhost:{guard.port}"}):
            resp = await client.post(f"{ROOT}what-if", data=form, headers={**cookie(guard), **headers})
            assert resp.status == 403, headers
            assert await resp.text() == "a request from another site is refused\n"
        # what Chromium sends for the page's own form (Origin is "null" under some referrer policies)
        for headers in ({"Origin": origin, "Sec-Fetch-Site": "same-origin"}, {"Origin": "null", "Sec-Fetch-Site":
                        "same-origin"}, {}):
            resp = await client.post(f"{ROOT}what-if", data=form, headers={**cookie(guard), **headers})
            assert resp.status == 200 and "Admitted now" in await resp.text(), headers
    guarded(check)


def test_every_response_carries_the_security_headers() -> None:
    async def check(client: TestClient, guard: Guard) -> None:
        page = await client.get(ROOT, headers=cookie(guard))
        refused = await client.get("/")
        missing = await client.get(f"{ROOT}nothing-here", headers=cookie(guard))
        stream = await client.get(f"{ROOT}events", headers=cookie(guard))
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
