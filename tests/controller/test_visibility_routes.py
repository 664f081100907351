"""The visibility server's application (``VisibilityServer.app``) without TLS or a cluster: what each
request is authorized as (the SubjectAccessReviews the fake API server records), and what an
aggregated API server must answer the API aggregator (discovery, aggregated discovery, OpenAPI v2 and
v3, ``/version``, the probes). Bearer tokens stand in for the callers (tests/controller/fake_auth.py's
fake API: alice and bob). A standby (no controller yet, or one not synced) answers 503."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from pykueue.controller.serving import auth
from pykueue.controller.visibility.server import VisibilityOptions, VisibilityServer
from tests.controller.fake_auth import CONFIG_DATA, Clock, FakeApi

GROUP = "visibility.kueue.x-k8s.io"
BASE = f"/apis/{GROUP}/v1beta2"
ALICE = {"Authorization": "Bearer alice-token"}
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _run(api: FakeApi, scenario: Callable[[TestClient], Awaitable[None]]) -> None:
    d = auth.Delegated(None, reviewer=api, clock=Clock())
    d.set_config(auth.AuthConfig.from_data(CONFIG_DATA))
    server = VisibilityServer(VisibilityOptions(port=0), None, d, lambda: None)  # type: ignore[arg-type]

    async def run() -> None:
        async with TestClient(TestServer(server.app())) as client:
            await scenario(client)

    asyncio.run(run())


def _reviews(api: FakeApi) -> list[dict[str, Any]]:
    """The SubjectAccessReview specs asked so far, without the user."""
    return [{k: v for k, v in body["spec"].items() if k not in ("user", "groups")}
            for path, body in api.calls if path == auth.SUBJECT_ACCESS_REVIEWS]


def test_a_queue_route_is_authorized_as_its_resource_from_the_matched_route() -> None:
    api = FakeApi()
    api.grants |= {("alice", "team-a/localqueues/pendingworkloads"), ("alice", "/clusterqueues/pendingworkloads")}

    async def scenario(client: TestClient) -> None:
        r = await client.get(f"{BASE}/namespaces/team-a/localqueues/lq/pendingworkloads", headers=ALICE)
        assert r.status == 503  # allowed; no controller runs here
        r = await client.get(f"/apis/{GROUP}/v1beta1/clusterqueues/cq/pendingworkloads?limit=1", headers=ALICE)
        assert r.status == 503
        assert _reviews(api) == [
            {"resourceAttributes": {"verb": "get", "group": GROUP, "version": "v1beta2", "resource": "localqueues",
                                    "subresource": "pendingworkloads", "name": "lq", "namespace": "team-a"}},
            {"resourceAttributes": {"verb": "get", "group": GROUP, "version": "v1beta1",
                                    "resource": "clusterqueues", "subresource": "pendingworkloads", "name": "cq"}}]
        # the caller is in system:authenticated, as k8s.io/apiserver's authenticator adds it
        assert all(body["spec"]["groups"] == ["system:authenticated"] for path, body in api.calls
                   if path == auth.SUBJECT_ACCESS_REVIEWS)

    _run(api, scenario)


def test_an_encoded_slash_is_refused_before_anyone_is_asked() -> None:
    api = FakeApi()

    async def scenario(client: TestClient) -> None:
        for path in (f"{BASE}/namespaces/team-a%2Fother/localqueues/lq/pendingworkloads",
                     f"{BASE}/clusterqueues/a%2fb/pendingworkloads", f"/apis/{GROUP}%2Fv1beta2"):
            r = await client.get(path, headers=ALICE)
            assert r.status == 400 and (await r.json())["reason"] == "BadRequest", path
        # even unauthenticated: nothing reached the authenticator or the authorizer
        assert (await client.get(f"{BASE}/clusterqueues/a%2Fb/pendingworkloads")).status == 400
        assert api.calls == []
        # %2F in the query is no path
        api.grants.add(("alice", "/clusterqueues/pendingworkloads"))
        assert (await client.get(f"{BASE}/clusterqueues/cq/pendingworkloads?x=a%2Fb", headers=ALICE)).status == 503

    _run(api, scenario)


def test_a_path_under_the_group_that_is_not_discovery_is_denied_without_a_non_resource_check() -> None:
    """Before, every unrouted path became a non-resource SubjectAccessReview: one granted the path
    (``/apis/*`` through system:discovery) reached the router."""
    api = FakeApi()
    paths = (f"{BASE}/clusterqueues/cq", f"{BASE}/clusterqueues/cq/pendingworkloads/",
             f"{BASE}//clusterqueues/cq/pendingworkloads", f"{BASE}/namespaces/ns/localqueues/lq",
             f"{BASE}/workloads", f"/apis/{GROUP}/v1alpha1", f"/apis/{GROUP}/v1beta3/clusterqueues/cq/pendingworkloads")
    api.grants |= {("alice", p) for p in paths} | {("alice", BASE)}

    async def scenario(client: TestClient) -> None:
        for path in paths:
            r = await client.get(path, headers=ALICE)
            assert r.status == 403 and (await r.json())["reason"] == "Forbidden", path
        # a method no route has, on discovery and on a queue route
        assert (await client.post(BASE, headers=ALICE)).status == 403
        assert (await client.delete(f"{BASE}/clusterqueues/cq/pendingworkloads", headers=ALICE)).status == 403
        assert _reviews(api) == []
        # discovery itself is a non-resource URL
        r = await client.get(BASE, headers=ALICE)
        assert r.status == 200 and (await r.json())["kind"] == "APIResourceList"
        assert _reviews(api) == [{"nonResourceAttributes": {"path": BASE, "verb": "get"}}]
        # outside the group an unknown path is checked as a non-resource URL, then not found
        api.grants.add(("alice", "/nothing/here"))
        assert (await client.get("/nothing/here", headers=ALICE)).status == 404
        assert _reviews(api)[-1] == {"nonResourceAttributes": {"path": "/nothing/here", "verb": "get"}}

    _run(api, scenario)


def test_aggregated_discovery_is_what_the_aggregator_asks_for() -> None:
    api = FakeApi()
    api.grants.add(("alice", "/apis"))

    async def scenario(client: TestClient) -> None:
        # the aggregator's Accept: v2, then v2beta1
        r = await client.get("/apis", headers={**ALICE, "Accept": f"{V2},{V2BETA1}"})
        assert r.status == 200 and r.headers["Content-Type"] == V2
        body = await r.json()
        assert body["kind"] == "APIGroupDiscoveryList" and body["apiVersion"] == "apidiscovery.k8s.io/v2"
        (item,) = body["items"]
        assert item["metadata"]["name"] == GROUP
        assert [v["version"] for v in item["versions"]] == ["v1beta2", "v1beta1"]
        v1beta2 = item["versions"][0]
        assert v1beta2["freshness"] == "Current"
        resources = {r["resource"]: r for r in v1beta2["resources"]}
        assert set(resources) == {"clusterqueues", "localqueues"}
        assert resources["clusterqueues"]["scope"] == "Cluster" and resources["localqueues"]["scope"] == "Namespaced"
        assert resources["localqueues"]["subresources"] == [{
            "subresource": "pendingworkloads", "verbs": ["get"],
            "responseKind": {"group": GROUP, "version": "v1beta2", "kind": "PendingWorkloadsSummary"}}]
        # unchanged since: 304 with the ETag it holds
        r2 = await client.get("/apis", headers={**ALICE, "Accept": V2, "If-None-Match": r.headers["ETag"]})
        assert r2.status == 304
        # v2beta1 alone, kubectl's list (v2 first, plain JSON last), plain JSON, and nothing writable
        r = await client.get("/apis", headers={**ALICE, "Accept": V2BETA1})
        assert r.headers["Content-Type"] == V2BETA1
        assert (await r.json())["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
        r = await client.get("/apis", headers={**ALICE, "Accept": f"{V2};q=0.9,application/json;q=1"})
        assert (await r.json())["kind"] == "APIGroupList"
        r = await client.get("/apis", headers={**ALICE, "Accept": f"{V2},{V2BETA1},application/json"})
        assert r.headers["Content-Type"] == V2
        r = await client.get("/apis", headers=ALICE)
        assert r.headers["Content-Type"] == "application/json" and (await r.json())["kind"] == "APIGroupList"
        r = await client.get("/apis", headers={**ALICE, "Accept": "application/vnd.kubernetes.protobuf"})
        assert r.status == 406

    _run(api, scenario)


def test_openapi_v2_and_v3_version_and_probes() -> None:
    api = FakeApi()
    api.grants |= {("alice", p) for p in ("/openapi/v2", "/openapi/v3", f"/openapi/v3/apis/{GROUP}/v1beta2",
                                          "/version")}
    cq_path = f"{BASE}/clusterqueues/{{name}}/pendingworkloads"

    async def scenario(client: TestClient) -> None:
        # the aggregator's v2 download: JSON, with the visibility paths and their definitions
        r = await client.get("/openapi/v2", headers={**ALICE, "Accept": "application/json"})
        assert r.status == 200 and r.headers["Content-Type"] == "application/json" and r.headers["ETag"]
        spec = await r.json()
        assert spec["swagger"] == "2.0"
        assert {cq_path, f"/apis/{GROUP}/v1beta1/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads"} \
            <= set(spec["paths"])
        ref = spec["paths"][cq_path]["get"]["responses"]["200"]["schema"]["$ref"]
        definition = spec["definitions"][ref.removeprefix("#/definitions/")]
        assert definition["x-kubernetes-group-version-kind"] == [
            {"group": GROUP, "kind": "PendingWorkloadsSummary", "version": "v1beta2"}]
        for value in spec["definitions"].values():  # every reference resolves
            for item in (value["properties"].get("items") or {}).get("items", {}).values():
                assert item.removeprefix("#/definitions/") in spec["definitions"]
        # protobuf only: 406; protobuf or JSON: JSON
        assert (await client.get("/openapi/v2", headers={**ALICE, "Accept": PROTOBUF_V2})).status == 406
        r = await client.get("/openapi/v2", headers={**ALICE, "Accept": f"{PROTOBUF_V2}, application/json"})
        assert r.status == 200 and (await r.json())["swagger"] == "2.0"
        # v3: the index names the group-versions only, each document behind its serverRelativeURL
        index = await (await client.get("/openapi/v3", headers=ALICE)).json()
        assert set(index["paths"]) == {f"apis/{GROUP}/v1beta2", f"apis/{GROUP}/v1beta1"}
        url = index["paths"][f"apis/{GROUP}/v1beta2"]["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/apis/{GROUP}/v1beta2?hash=")
        doc = await (await client.get(url, headers=ALICE)).json()
        assert doc["openapi"].startswith("3.") and cq_path in doc["paths"]
        ref = doc["paths"][cq_path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"]
        # /version, and the probes without a SubjectAccessReview (alwaysAllowPaths)
        version = await (await client.get("/version", headers=ALICE)).json()
        assert version["gitVersion"].startswith("v") and "/" in version["platform"]
        before = len(_reviews(api))
        for probe in ("/healthz", "/readyz", "/livez"):
            r = await client.get(probe, headers={"Authorization": "Bearer bob-token"})
            assert (r.status, await r.text()) == (200, "ok"), probe
        assert len(_reviews(api)) == before
        assert (await client.get("/healthz")).status == 401  # still authenticated first

    _run(api, scenario)


def test_a_standby_answers_503_and_bad_options_400() -> None:
    import asyncio
    from types import SimpleNamespace

    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from pykueue.controller.visibility.api import Visibility

    controllers: list[Any] = []

    async def scenario() -> None:
        app = web.Application()
        Visibility(lambda: controllers[-1] if controllers else None).register(app)
        async with TestClient(TestServer(app)) as client:
            base = f"/apis/{GROUP}/v1beta2"
            r = await client.get(f"{base}/clusterqueues/cq/pendingworkloads")
            assert r.status == 503 and (await r.json())["reason"] == "ServiceUnavailable"
            r = await client.get(f"{base}/clusterqueues/cq/pendingworkloads?limit=-1")
            assert r.status == 400 and (await r.json())["reason"] == "BadRequest"
            r = await client.get(f"{base}/clusterqueues/cq/pendingworkloads?offset=x")
            assert r.status == 400
            assert (await (await client.get("/apis")).json())["groups"][0]["name"] == GROUP
            ready = asyncio.Event()
            controllers.append(SimpleNamespace(ready=ready, engine=None, informers={}))
            r = await client.get(f"{base}/clusterqueues/cq/pendingworkloads")
            assert r.status == 503  # not synced yet

    asyncio.run(scenario())
