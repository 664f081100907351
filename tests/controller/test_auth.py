"""Delegated authentication and authorization (`pykueue.controller.serving.auth`), without a cluster: the
TokenReview and SubjectAccessReview answers come from a fake API server that counts its calls, the
clock is the test's, and the client certificates are made here."""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from multidict import CIMultiDict

from pykueue.controller.serving import auth
from pykueue.controller.visibility import api as visibility
from tests.certs import Signed, der, make_cert, pem
from tests.controller.fake_auth import CLIENT_CA, CONFIG_DATA, FRONT_CA, NOW, Clock, FakeApi, delegated


def _cert(cn: str, orgs: tuple[str, ...] = (), issuer: Signed | None = None) -> Signed:
    return make_cert(cn, issuer, orgs=orgs, at=NOW)


# ---- the cache --------------------------------------------------------------------------------------------


def test_ttl_cache_expires_and_stays_bounded() -> None:
    clock = Clock()
    cache: auth.TTLCache[str, int] = auth.TTLCache(max_entries=2, clock=clock)
    cache.put("a", 1, 10)
    cache.put("b", 2, 5)
    clock.t += 5  # b's expiry is reached: gone; a has 5 s left
    assert (cache.get("a"), cache.get("b")) == (1, None)
    cache.put("c", 3, 10)
    cache.put("d", 4, 10)  # three entries for two places: the oldest (a) goes
    assert (cache.get("a"), cache.get("c"), cache.get("d"), len(cache)) == (None, 3, 4, 2)


def test_token_reviews_are_cached_ten_seconds_rejections_five_and_errors_not_at_all() -> None:
    api, clock = FakeApi(), Clock()
    d = delegated(api, clock)

    async def scenario() -> None:
        assert (await d.from_token("alice-token")).name == "alice"
        clock.t += 9.9
        assert (await d.from_token("alice-token")).name == "alice"
        assert api.count(auth.TOKEN_REVIEWS) == 1  # still cached
        clock.t += 0.1
        await d.from_token("alice-token")
        assert api.count(auth.TOKEN_REVIEWS) == 2  # 10 s: asked again
        assert await d.from_token("forged") is None
        clock.t += 4.9
        assert await d.from_token("forged") is None
        assert api.count(auth.TOKEN_REVIEWS) == 3
        clock.t += 0.1
        await d.from_token("forged")
        assert api.count(auth.TOKEN_REVIEWS) == 4  # a rejection is kept 5 s only
        api.fail = True
        with pytest.raises(auth.AuthError):
            await d.from_token("bob-token")
        api.fail = False
        assert (await d.from_token("bob-token")).name == "bob"  # the error was not cached
        assert all("alice-token" not in key for key in d.tokens._items)  # kept by digest, not in clear

    asyncio.run(scenario())


def test_decisions_are_cached_by_user_and_attributes() -> None:
    api, clock = FakeApi(), Clock()
    d = delegated(api, clock)
    alice = auth.User("alice", groups=("system:authenticated",))
    lq = auth.Attributes("get", group=visibility.GROUP, version="v1beta2", resource="localqueues",
                         subresource="pendingworkloads", name="lq", namespace="team-a")

    async def scenario() -> None:
        assert await d.authorize(alice, lq) is False
        api.grants.add(("alice", "team-a/localqueues/pendingworkloads"))
        clock.t += 4.9
        assert await d.authorize(alice, lq) is False  # the denial is still cached
        clock.t += 0.1
        assert await d.authorize(alice, lq) is True  # asked again after 5 s: the new grant counts
        api.grants.clear()
        clock.t += 9.9
        assert await d.authorize(alice, lq) is True  # an allowed decision lasts 10 s
        clock.t += 0.1
        assert await d.authorize(alice, lq) is False
        other = auth.Attributes("get", group=visibility.GROUP, version="v1beta2", resource="localqueues",
                                subresource="pendingworkloads", name="lq", namespace="team-b")
        assert await d.authorize(alice, other) is False
        assert api.count(auth.SUBJECT_ACCESS_REVIEWS) == 4  # denied, allowed, denied again, team-b
        masters = auth.User("admin", groups=("system:masters",))
        assert await d.authorize(masters, other) is True
        assert api.count(auth.SUBJECT_ACCESS_REVIEWS) == 4  # the privileged group is never asked about

    asyncio.run(scenario())
    spec = api.calls[0][1]["spec"]
    assert spec == {"user": "alice", "groups": ["system:authenticated"], "resourceAttributes": {
        "verb": "get", "group": "visibility.kueue.x-k8s.io", "version": "v1beta2", "resource": "localqueues",
        "subresource": "pendingworkloads", "name": "lq", "namespace": "team-a"}}


# ---- client certificates and the front proxy's headers ----------------------------------------------------


def _headers(**values: str | list[str]) -> CIMultiDict[str]:
    headers: CIMultiDict[str] = CIMultiDict()
    for key, value in values.items():
        for v in value if isinstance(value, list) else [value]:
            headers.add(key.replace("_", "-"), v)
    return headers


def test_headers_are_trusted_only_from_the_allowed_front_proxy_certificate() -> None:
    d = delegated(FakeApi(), Clock())
    proxy = der(_cert("front-proxy-client", issuer=FRONT_CA)[0])
    headers = _headers(X_Remote_User="carol", X_Remote_Group=["team-a", "system:authenticated"],
                       X_Remote_Extra_Scopes=["a", "b"])
    assert d.from_certificate(proxy, headers) == auth.User(
        "carol", groups=("team-a", "system:authenticated"), extra=(("scopes", ("a", "b")),))
    # the front proxy's CA, but a name not in requestheader-allowed-names
    assert d.from_certificate(der(_cert("someone", issuer=FRONT_CA)[0]), headers) is None
    # a certificate of the client CA is its own user: the headers are ignored
    client = der(_cert("dave", ("devs",), issuer=CLIENT_CA)[0])
    assert d.from_certificate(client, headers) == auth.User("dave", groups=("devs",))
    # no certificate, or one of a CA the ConfigMap does not list: nobody
    assert d.from_certificate(None, headers) is None
    assert d.from_certificate(der(_cert("front-proxy-client", issuer=_cert("rogue-ca"))[0]), headers) is None
    # the ConfigMap changes: the allowed names are reloaded
    d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "requestheader-allowed-names": '["aggregator"]'}))
    assert d.from_certificate(proxy, headers) is None
    assert d.from_certificate(der(_cert("aggregator", issuer=FRONT_CA)[0]), headers).name == "carol"
    # an empty list of allowed names accepts any certificate of the front proxy's CA
    d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "requestheader-allowed-names": ""}))
    assert d.from_certificate(der(_cert("whoever", issuer=FRONT_CA)[0]), headers).name == "carol"
    # a front proxy that names nobody authenticates nobody
    assert d.from_certificate(proxy, _headers(X_Remote_Group="g")) is None


def test_one_ca_for_front_proxy_and_clients_tries_each_in_turn() -> None:
    """Some clusters sign the front proxy's certificate with the client CA: a client certificate of
    another name is then its own user, and the front proxy's is believed only with a user header."""
    shared = pem(CLIENT_CA[0])
    d = delegated(FakeApi(), Clock())
    d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "requestheader-client-ca-file": shared}))
    forged = _headers(X_Remote_User="pykueue-admin", X_Remote_Group="system:masters")
    dave = der(_cert("dave", ("devs",), issuer=CLIENT_CA)[0])
    assert d.from_certificate(dave, forged) == auth.User("dave", groups=("devs",))  # not the headers' admin
    proxy = der(_cert("front-proxy-client", issuer=CLIENT_CA)[0])
    assert d.from_certificate(proxy, forged).name == "pykueue-admin"
    assert d.from_certificate(proxy, _headers()) == auth.User("front-proxy-client")


def test_a_front_proxy_ca_that_signs_client_certificates_without_allowed_names_is_warned_of(caplog) -> None:
    """With one CA for both and no allowed names, any client certificate is believed as the front
    proxy (its X-Remote-User headers): the configuration is logged as a warning, once per change."""
    shared = pem(CLIENT_CA[0])
    open_data = {**CONFIG_DATA, "requestheader-client-ca-file": shared, "requestheader-allowed-names": ""}
    d = delegated(FakeApi(), Clock())
    with caplog.at_level(logging.WARNING, logger="pykueue.auth"):
        d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "requestheader-client-ca-file": shared}))
        d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "requestheader-allowed-names": ""}))
        assert caplog.records == []  # allowed names set, or two different CAs: nothing to warn of
        d.set_config(auth.AuthConfig.from_data(open_data))
        d.set_config(auth.AuthConfig.from_data(open_data))  # unchanged: not again
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "the front-proxy CA also signs client certificates and no requestheader-allowed-names are set"]
    dave = der(_cert("dave", issuer=CLIENT_CA)[0])  # why: dave's own certificate now speaks for anyone
    assert d.from_certificate(dave, _headers(X_Remote_User="admin")) == auth.User("admin")


def test_listeners_hear_of_a_changed_config_only() -> None:
    d = delegated(FakeApi(), Clock())
    heard: list[auth.AuthConfig] = []
    d.listeners.append(heard.append)
    d.set_config(auth.AuthConfig.from_data(CONFIG_DATA))
    assert heard == []
    d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "client-ca-file": ""}))
    assert len(heard) == 1 and heard[0].client_cas == ()


# ---- the middleware, over HTTP ------------------------------------------------------------------------------


def test_middleware_answers_401_403_and_lets_unguarded_paths_through() -> None:
    api = FakeApi()
    d = delegated(api, Clock())
    api.grants.add(("alice", "/metrics"))

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="data")

    def guard(request: web.Request) -> auth.Attributes | None:
        return None if request.path == "/healthz" else auth.Attributes("get", path=request.path)

    async def scenario() -> None:
        app = web.Application(middlewares=[auth.middleware(d, guard)])
        app.router.add_get("/metrics", ok)
        app.router.add_get("/healthz", ok)
        async with TestClient(TestServer(app)) as client:
            r = await client.get("/metrics")
            assert r.status == 401 and (await r.json())["reason"] == "Unauthorized"
            r = await client.get("/metrics", headers={"Authorization": "Bearer nonsense"})
            assert r.status == 401
            r = await client.get("/metrics", headers={"Authorization": "Bearer bob-token"})
            assert r.status == 403
            assert (await r.json())["message"] == 'forbidden: User "bob" cannot get path "/metrics"'
            r = await client.get("/metrics", headers={"Authorization": "Bearer alice-token"})
            assert (r.status, await r.text()) == (200, "data")
            # a forged front-proxy header on a plain connection: no certificate, so not trusted
            r = await client.get("/metrics", headers={"X-Remote-User": "alice", "X-Remote-Group": "system:masters"})
            assert r.status == 401
            assert (await client.get("/healthz")).status == 200
            api.fail = True
            r = await client.get("/metrics", headers={"Authorization": "Bearer bob-token"})  # bob's review is cached
            assert r.status == 403
            r = await client.get("/metrics", headers={"Authorization": "Bearer other"})
            assert r.status == 500 and (await r.json())["reason"] == "InternalError"

    asyncio.run(scenario())


# ---- client certificates through intermediate CAs ---------------------------------------------------------


def _signed(cn: str, issuer: Signed, *, ca: bool = False, **kw: Any) -> Signed:
    """A certificate ``issuer`` signs: an intermediate CA with ``ca``, else a leaf."""
    return make_cert(cn, issuer, ca=ca, at=NOW, **kw)


def test_a_client_certificate_chains_to_the_client_ca_through_the_intermediates_it_sends() -> None:
    from cryptography.x509.oid import ExtendedKeyUsageOID as EKU

    d = delegated(FakeApi(), Clock())
    middle = _signed("team-ca", CLIENT_CA, ca=True)
    erin = _signed("erin", middle, orgs=("ops",), usages=(EKU.CLIENT_AUTH,))[0]
    # the root's CA signed the intermediate, which signed erin: with the intermediate sent, she is herself
    assert d.from_certificate(der(erin), _headers(), (der(erin), der(middle[0]))) == auth.User(
        "erin", groups=("ops",))
    # without it nothing links her to the root; an intermediate of another root does not either
    assert d.from_certificate(der(erin), _headers()) is None
    assert d.from_certificate(der(erin), _headers(), (der(_signed("team-ca", _cert("rogue"), ca=True)[0]),)) is None
    # two intermediates deep, when the root's path length allows one only: refused; allows two: taken
    for root_length, expected in ((1, None), (2, "frank")):
        root = _cert("root")
        limited = (x509.CertificateBuilder().subject_name(root[0].subject).issuer_name(root[0].subject)
                   .public_key(root[1].public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(NOW - datetime.timedelta(days=1)).not_valid_after(NOW + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=root_length), critical=True)
                   .sign(root[1], hashes.SHA256()))
        d.set_config(auth.AuthConfig.from_data({**CONFIG_DATA, "client-ca-file": pem(limited)}))
        upper = _signed("upper", (limited, root[1]), ca=True)
        lower = _signed("lower", upper, ca=True)
        frank = _signed("frank", lower)[0]
        user = d.from_certificate(der(frank), _headers(), (der(frank), der(lower[0]), der(upper[0])))
        assert (user.name if user else None) == expected, root_length
    d.set_config(auth.AuthConfig.from_data(CONFIG_DATA))
    # a signer that is not a CA, an expired intermediate, a leaf only for servers: no chain
    not_ca = _signed("not-a-ca", CLIENT_CA)
    grace = _signed("grace", not_ca)[0]
    assert d.from_certificate(der(grace), _headers(), (der(not_ca[0]),)) is None
    expired = _signed("old-ca", CLIENT_CA, ca=True, days=-1)  # ended yesterday, valid the day before
    assert d.from_certificate(der(_signed("heidi", expired)[0]), _headers(), (der(expired[0]),)) is None
    server = _signed("ivan", middle, usages=(EKU.SERVER_AUTH,))[0]
    assert d.from_certificate(der(server), _headers(), (der(middle[0]),)) is None
    # an intermediate restricted to servers cannot vouch for a client either
    servers_ca = _signed("servers-ca", CLIENT_CA, ca=True, usages=(EKU.SERVER_AUTH,))
    assert d.from_certificate(der(_signed("judy", servers_ca)[0]), _headers(), (der(servers_ca[0]),)) is None
    # a front proxy whose certificate is signed through an intermediate of the request-header CA
    front_middle = _signed("front-middle", FRONT_CA, ca=True)
    proxy = _signed("front-proxy-client", front_middle)[0]
    assert d.from_certificate(der(proxy), _headers(X_Remote_User="carol"), (der(front_middle[0]),)).name == "carol"

