"""`pykueue controller --dashboard-port`: the dashboard over HTTPS behind the controller's delegated
authentication, every page a non-resource URL under /dashboard (get to look, post for the what-if box).
The TokenReview and SubjectAccessReview answers come from test_auth's fake API server."""

from __future__ import annotations

import argparse
import asyncio

import aiohttp

from pykueue.cli import _parser
from pykueue.controller import command
from pykueue.controller.serving import limits as serving
from pykueue.dashboard import embed
from pykueue.dashboard.server import Dashboard
from pykueue.dashboard.state import Hub
from pykueue.engine import model
from tests.controller.fake_auth import Clock, FakeApi, delegated
from tests.dashboard.objects import job, live


class Served:
    def __init__(self, listener: serving.Listener) -> None:
        self.listener, self.port = listener, listener.port

    async def stop(self) -> None:
        await self.listener.stop()


async def fake_serve(kube, config, *, host, port, middlewares=(), ssl_context=None) -> Served:
    """embed.serve (its bounds and middlewares, on loopback) over hand-made objects instead of watches."""
    limits = serving.Limits(serving.DASHBOARD)
    app = Dashboard(live, Hub(), config).app(embed.app_middlewares(limits, middlewares))
    listener = serving.Listener(app, limits, "127.0.0.1", 0, ssl_context=ssl_context, shutdown_timeout=1.0)
    await listener.start()
    return Served(listener)


def test_the_cli_hands_the_controller_its_dashboard_off_by_default() -> None:
    args = _parser().parse_args(["controller"])
    assert args.dashboard_port == 0 and callable(args.dashboard)
    assert not command._dashboard_wanted(args)
    assert command._dashboard_wanted(_parser().parse_args(["controller", "--dashboard-port", "8444"]))


def test_pages_are_authenticated_and_authorized_per_path_and_verb() -> None:
    api = FakeApi()
    api.grants |= {("alice", "/dashboard"), ("alice", "/dashboard/queues/solo")}
    auth = delegated(api, Clock())
    args = argparse.Namespace(dashboard_port=1, dashboard_host="127.0.0.1", dashboard=fake_serve)

    async def scenario() -> None:
        served = await command._dashboard(None, model.Config(), args, auth)
        assert served is not None
        url = f"https://127.0.0.1:{served.served.port}"
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
                async def get(path: str, token: str | None = None, **kw) -> tuple[int, str]:
                    headers = {"Authorization": f"Bearer {token}"} if token else {}
                    method = "POST" if "data" in kw else "GET"
                    async with http.request(method, url + path, headers=headers, **kw) as r:
                        return r.status, await r.text()

                assert (await get("/queues/solo"))[0] == 401
                status, text = await get("/queues/solo", "bob-token")
                assert status == 403 and 'User \\"bob\\" cannot get path \\"/dashboard/queues/solo\\"' in text
                status, text = await get("/queues/solo", "alice-token")
                assert status == 200 and "<h2>ClusterQueue solo</h2>" in text
                assert (await get("/", "alice-token"))[0] == 200  # "/" is checked as /dashboard
                status, text = await get("/what-if", "alice-token", data={"manifest": job("x", "spare")})
                assert status == 403 and 'cannot post path \\"/dashboard/what-if\\"' in text
                # the security headers, on a page and on the authentication's own refusal alike
                for headers in ({"Authorization": "Bearer alice-token"}, {}):
                    async with http.get(url + "/", headers=headers) as r:
                        assert r.headers["X-Frame-Options"] == "DENY", r.status
                        assert r.headers["X-Content-Type-Options"] == "nosniff"
                        assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]
        finally:
            await served.stop()
        posts = [body["spec"]["nonResourceAttributes"] for path, body in api.calls if "nonResourceAttributes"
                 in body["spec"]]
        assert {"path": "/dashboard/what-if", "verb": "post"} in posts

    asyncio.run(scenario())


def test_a_post_from_another_site_is_refused_before_it_is_authenticated() -> None:
    """The embedded dashboard applies the standalone one's origin check (guard.same_site_writes) in
    front of the delegated authentication: a cross-site what-if POST carrying a caller's credentials
    (as a proxy that adds them would send it) is 403 and costs no TokenReview; the page's own form
    (its Origin is the server's https origin) is answered."""
    api = FakeApi()
    api.grants |= {("alice", "/dashboard/what-if")}
    auth = delegated(api, Clock())
    args = argparse.Namespace(dashboard_port=1, dashboard_host="127.0.0.1", dashboard=fake_serve)

    async def scenario() -> None:
        served = await command._dashboard(None, model.Config(), args, auth)
        assert served is not None
        port = served.served.port
        url = f"https://127.0.0.1:{port}/what-if"
        form = {"manifest": job("x", "spare")}
        alice = {"Authorization": "Bearer alice-token"}
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
                for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                                {"Origin": f"http://127.0.0.1:{port}"}, {"Origin": "null"}):
                    async with http.post(url, data=form, headers={**alice, **headers}) as r:
                        assert (r.status, await r.text()) == (403, "a request from another site is refused\n"), headers
                        assert r.headers["X-Frame-Options"] == "DENY"
                assert api.calls == []  # refused before any TokenReview
                for headers in ({"Origin": f"https://127.0.0.1:{port}"}, {"Sec-Fetch-Site": "same-origin"}, {}):
                    async with http.post(url, data=form, headers={**alice, **headers}) as r:
                        assert r.status == 200 and "Admitted now" in await r.text(), headers
                async with http.get(url, headers={**alice, "Origin": "https://evil.example"}) as r:
                    assert r.status == 200  # a GET changes nothing: its origin is not checked
        finally:
            await served.stop()

    asyncio.run(scenario())
