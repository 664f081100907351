"""Webhooks for a controller run outside the cluster (``pykueue controller --kubeconfig FILE``).

In the cluster, the release manifest installs the webhook configurations and a Service in front of the
controller's pod. A controller started from a kubeconfig has neither, so without this module the API
server would accept every Job unsuspended, every Kueue object unchecked, and would refuse every v1beta1
object (its CRDs convert through a Service that does not exist). Here the controller protects the cluster
the same way from where it runs: it serves the webhooks on loopback and registers them for
``https://127.0.0.1:PORT`` with its self-made CA (the certificate names ``127.0.0.1``):

- the mutating and validating configurations, created with the manifest's rules when they do not exist,
  and labelled ``app.kubernetes.io/managed-by: pykueue-controller`` so that only these are ever changed
  or removed here (configurations an install made are left to it; ``CertManager`` points those at the
  URL, as ``--webhook-url`` always did);
- the CRDs' conversion webhook, pointed at the URL by ``CertManager`` (``Options.url``).

When the controller stops (SIGTERM, Ctrl-C), ``--webhooks-on-stop`` decides what the configurations it
registered become: ``remove`` (the default) deletes them, so the cluster behaves as if pykueue were not
installed; ``fail-open`` keeps them with ``failurePolicy: Ignore``, so requests pass unchecked while it
is away and the next start takes them over; ``keep`` leaves them failing closed (``Fail``), upstream's
behaviour when its controller is down. The CRDs' conversion stays pointed at the URL: only v1beta1
requests need it (kubectl and the garbage and namespace controllers use the stored v1beta2), and they
fail until a controller serves it again. A controller killed with SIGKILL cannot clean up: its
configurations stay, failing closed, until the next start takes them over or someone deletes them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pykueue.controller.webhooks import names
from pykueue.controller.webhooks.server import API_SERVICE, MUTATING, VALIDATING
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.resources import Resource

log = logging.getLogger("pykueue.webhooks")

LOOPBACK = "127.0.0.1"
MANAGER = "pykueue-controller-local"  # the field manager of what is registered here
MANAGED_BY = ("app.kubernetes.io/managed-by", "pykueue-controller")
ON_STOP = ("remove", "fail-open", "keep")
_SYSTEM_NAMESPACES = ("kube-system",)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
NAMESPACE_RES = Resource("", "v1", "namespaces", "Namespace", False)
SERVICE_RES = Resource("", "v1", "services", "Service", True)


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine's loopback (where an API server on it can call back)."""
    return (urlsplit(url).hostname or "") in LOOPBACK_HOSTS


def local_url(port: int) -> str:
    return f"https://{LOOPBACK}:{port}"


def _webhook(hook: names.Hook, url: str, ca_bundle: str, failure_policy: str,
             namespace_selector: dict[str, Any] | None = None) -> dict[str, Any]:
    webhook: dict[str, Any] = {
        "name": hook.name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": failure_policy,
        "clientConfig": {"url": url.rstrip("/") + hook.path, "caBundle": ca_bundle},
        "rules": [{"apiGroups": [hook.group], "apiVersions": [hook.version], "operations": list(hook.operations),
                   "resources": list(hook.resources)}],
    }
    if namespace_selector is not None:
        webhook["namespaceSelector"] = namespace_selector
    if hook.managed_only:
        webhook["objectSelector"] = names.MANAGED_PODS
    return webhook


def configurations(service: str, namespace: str, url: str, ca_bundle: str,
                   failure_policy: str = "Fail", frameworks: tuple[str, ...] = ("batch/job",)
                   ) -> list[tuple[Any, dict[str, Any]]]:
    """The mutating and validating configurations as the release manifest has them (same names, hooks,
    paths and rules; the controller's namespace and kube-system are never queued), called at ``url``."""
    mutating, validating = names.configuration_names(service)
    never_queued = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                          "values": [*_SYSTEM_NAMESPACES, namespace]}]}
    labels = {MANAGED_BY[0]: MANAGED_BY[1]}
    return [
        (MUTATING, {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                    "metadata": {"name": mutating, "labels": labels},
                    "webhooks": [_webhook(h, url, ca_bundle, failure_policy, never_queued) for h in names.mutating_for(frameworks)]}),
        (VALIDATING, {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                      "metadata": {"name": validating, "labels": labels},
                      "webhooks": [*(_webhook(h, url, ca_bundle, failure_policy) for h in names.VALIDATING),
                                   *(_webhook(h, url, ca_bundle, failure_policy, never_queued)
                                     for h in names.validating_jobs_for(frameworks))]}),
    ]


def is_ours(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY[0]) == MANAGED_BY[1]


@dataclass
class LocalWebhooks:
    """Registers the webhook configurations for a local URL, and undoes that on stop as chosen."""

    kube: Kube
    service: str
    namespace: str
    url: str
    on_stop: str = "remove"
    frameworks: tuple[str, ...] = ("batch/job",)

    def __post_init__(self) -> None:
        self.registered: list[tuple[Any, str]] = []  # (resource, name) of the configurations applied here
        self.installed: list[str] = []  # configurations an install made: then the install owns the rest too

    async def register(self, ca_bundle: str) -> list[str]:
        """Apply each configuration that is absent or ours; return the names of those registered."""
        for res, body in configurations(self.service, self.namespace, self.url, ca_bundle,
                                        frameworks=self.frameworks):
            name = body["metadata"]["name"]
            try:
                current = await self.kube.get(res, name)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                current = None
            if current is not None and not is_ours(current):
                # an install's configuration (kubectl apply -f config/manifests.yaml, helm): it stays the
                # install's; CertManager points it at this controller's URL and trusts its CA
                log.info("webhook configuration installed by someone else: left as installed",
                         extra={"fields": {"kind": body["kind"], "name": name}})
                self.installed.append(name)
                continue
            await self.kube.apply(res, body, manager=MANAGER)
            self.registered.append((res, name))
        if self.registered:
            log.info("webhooks registered", extra={"fields": {
                "url": self.url, "configurations": ",".join(name for _, name in self.registered),
                "onStop": self.on_stop}})
        return [name for _, name in self.registered]

    async def unregister(self) -> None:
        """What ``--webhooks-on-stop`` says, for the configurations registered here; never raises (the
        controller is stopping: a failure is logged with what is left behind)."""
        if self.on_stop == "keep" or not self.registered:
            return
        for res, name in self.registered:
            try:
                obj = await self.kube.get(res, name)
                hooks = obj.get("webhooks") or []
                mine = self.url.rstrip("/") + "/"
                if not all(str((h.get("clientConfig") or {}).get("url", "")).startswith(mine) for h in hooks):
                    # another controller registered itself since (a second local replica): its now
                    log.info("webhook configuration taken over by another controller: left to it",
                             extra={"fields": {"kind": res.kind, "name": name}})
                    continue
                if self.on_stop == "remove":
                    await self.kube.delete(res, name, propagation=None)
                else:  # fail-open: every webhook of it ignores a failed call
                    ops = [{"op": "replace", "path": f"/webhooks/{i}/failurePolicy", "value": "Ignore"}
                           for i in range(len(hooks))]
                    if ops:
                        await self.kube.json_patch(res, name, ops)
            except ApiError as exc:
                if exc.status == 404:
                    continue
                log.warning("webhook configuration not cleaned up", extra={"fields": {
                    "kind": res.kind, "name": name, "onStop": self.on_stop, "error": str(exc)}})
            except Exception as exc:  # noqa: BLE001 - the API server is away: say what is left behind
                log.warning("webhook configuration not cleaned up", extra={"fields": {
                    "kind": res.kind, "name": name, "onStop": self.on_stop, "error": repr(exc)}})
        log.info("webhooks unregistered" if self.on_stop == "remove" else "webhooks left failing open",
                 extra={"fields": {"configurations": ",".join(name for _, name in self.registered)}})


async def stale_api_services(kube: Kube, api_services: tuple[str, ...]) -> list[str]:
    """Warn about each of ``api_services`` (the visibility API's) that is registered but not available.

    A controller outside the cluster cannot be an aggregated API's backend (an APIService reaches its
    server through a Service), so one registered by an install whose Deployment does not run has no
    backend at all: discovery then reports errors and ``kubectl delete namespace`` hangs in Terminating
    (``NamespaceDeletionDiscoveryFailure``). Returns the names warned about; reading them is allowed to
    the controller's ServiceAccount (it patches their CA bundle)."""
    stale = []
    for name in api_services:
        try:
            obj = await kube.get(API_SERVICE, name)
        except ApiError:  # absent (404), or not this identity's to read: nothing to say
            continue
        available = next((c for c in (obj.get("status") or {}).get("conditions") or []
                          if c.get("type") == "Available"), None)
        if available is not None and available.get("status") == "True":
            continue  # something serves it (an in-cluster replica)
        service = (obj.get("spec") or {}).get("service") or {}
        log.warning("stale APIService: nothing serves it, so discovery fails and namespace deletion hangs; "
                    "delete it unless a controller in the cluster is about to serve it", extra={"fields": {
                        "name": name, "service": f"{service.get('namespace')}/{service.get('name')}",
                        "reason": (available or {}).get("reason", "unknown"),
                        "fix": f"kubectl delete apiservice {name}"}})
        stale.append(name)
    return stale


def visibility_objects(service: str, namespace: str, port: int, ca_bundle: str,
                       versions: tuple[str, ...]) -> list[tuple[Resource, dict[str, Any]]]:
    """An ExternalName Service ``service`` (the visibility Service, ``names.visibility_service``) that
    sends the API aggregator to ``localhost:PORT`` (this controller's visibility port, on the API
    server's machine), and the visibility API's APIServices behind it, as the chart has them
    (priorities, the CA it must trust); the certificate names ``SERVICE.NAMESPACE.svc``."""
    labels = {MANAGED_BY[0]: MANAGED_BY[1]}
    out: list[tuple[Resource, dict[str, Any]]] = [(SERVICE_RES, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": service, "namespace": namespace, "labels": labels},
        "spec": {"type": "ExternalName", "externalName": "localhost",
                 "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}})]
    for version in versions:
        out.append((API_SERVICE, {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{version}.visibility.kueue.x-k8s.io", "labels": labels},
            "spec": {"group": "visibility.kueue.x-k8s.io", "version": version, "groupPriorityMinimum": 100,
                     "versionPriority": 200 if version == "v1beta2" else 100, "caBundle": ca_bundle,
                     "service": {"name": service, "namespace": namespace, "port": port}}}))
    return out


@dataclass
class LocalVisibility:
    """The visibility API of a controller outside the cluster, registered while it serves it.

    Registered only when nothing else claims it (no Service of that name an install made, no APIService
    of another owner), in the controller's namespace (created, and labelled, when missing); removed when
    the controller stops, whatever ``--webhooks-on-stop`` says: an APIService without a backend breaks
    discovery and namespace deletion for everyone, while without one ``pykueue pending`` computes the
    same answer client-side."""

    kube: Kube
    service: str
    namespace: str
    port: int

    def __post_init__(self) -> None:
        self.registered: list[tuple[Resource, str, str | None]] = []
        self.created_namespace = False

    async def _get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return await self.kube.get(res, name, namespace)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def register(self, ca_bundle: str, versions: tuple[str, ...]) -> bool:
        objects = visibility_objects(self.service, self.namespace, self.port, ca_bundle, versions)
        for res, body in objects:
            meta = body["metadata"]
            current = await self._get(res, meta["name"], meta.get("namespace"))
            if current is not None and not is_ours(current):
                log.info("visibility API not registered: an install's object is in the way",
                         extra={"fields": {"kind": body["kind"], "name": meta["name"]}})
                return False
        if await self._get(NAMESPACE_RES, self.namespace) is None:
            await self.kube.create(NAMESPACE_RES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": self.namespace, "labels": {MANAGED_BY[0]: MANAGED_BY[1]}}})
            self.created_namespace = True
        for res, body in objects:
            meta = body["metadata"]
            await self.kube.apply(res, body, manager=MANAGER)
            self.registered.append((res, meta["name"], meta.get("namespace")))
        log.info("visibility API registered", extra={"fields": {
            "apiServices": ",".join(name for res, name, _ in self.registered if res is API_SERVICE),
            "service": f"{self.namespace}/{self.service}"}})
        return True

    async def unregister(self) -> None:
        """APIServices first (the aggregator stops routing), then the Service, then a namespace made here."""
        left = []
        try:
            service = await self._get(SERVICE_RES, self.service, self.namespace)
        except Exception:  # noqa: BLE001 - the API server is away: try the deletes anyway, and say so
            service = None
        ports = [p.get("port") for p in ((service or {}).get("spec") or {}).get("ports") or []]
        if service is not None and self.port not in ports:
            log.info("visibility API taken over by another controller: left to it")
            return
        for res, name, namespace in sorted(self.registered, key=lambda r: r[0] is not API_SERVICE):
            try:
                await self.kube.delete(res, name, namespace, propagation=None)
            except ApiError as exc:
                if exc.status != 404:
                    left.append(f"{res.kind} {name}: {exc}")
            except Exception as exc:  # noqa: BLE001 - stopping: say what is left behind
                left.append(f"{res.kind} {name}: {exc!r}")
        if self.created_namespace and not left:
            try:
                await self.kube.delete(NAMESPACE_RES, self.namespace, propagation=None)
            except Exception as exc:  # noqa: BLE001
                left.append(f"Namespace {self.namespace}: {exc!r}")
        if left:
            log.warning("visibility API not unregistered: delete what is left", extra={"fields": {
                "left": "; ".join(left)}})
        elif self.registered:
            log.info("visibility API unregistered")
