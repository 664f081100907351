"""The webhook server the controller runs: HTTPS on ``--webhook-port`` (9443), with its own certificates.

``CertManager`` does what upstream's cert controller does for Kueue: it keeps a CA and a serving
certificate (in the Secret named by ``--webhook-secret`` when given, else in memory: a bundle found on
disk is never trusted) and writes what the TLS server loads to a private directory (``certs.private_dir``),
renews them before they expire, and patches the CA bundle into the mutating and validating webhook
configurations and into the conversion webhook of the CRDs the API server converts through it, checking
again every ``sync_seconds`` (so a configuration re-applied without its bundle is repaired). With
``Options.visibility`` the same certificate also names the visibility API's Service (served on its own
port by ``pykueue.controller.visibility.server``, which loads these files and follows their renewal
through ``WebhookServer.listeners``) and the bundle is patched into that API's APIServices. With
``--webhook-url`` (a controller run outside the cluster) it also points those clientConfigs at that URL
instead of the Service. The TLS context is reloaded in place when the certificate changes: connections
made after that get the new certificate, open ones are not cut.

The webhook port asks no client for a certificate: its callers are the API server's admission and
conversion calls, which the webhook configurations authorize. Anything that reaches the port may send
to it, so it is bounded (``serving.WEBHOOKS``: 7 MiB bodies as controller-runtime's, read whole within
5 s and a byte budget before a worker is taken, bounded heads, header and idle timeouts, connection
caps in all and per client address, an in-flight cap), and each review is parsed, handled and encoded
on one of two worker threads (``serving.Work``), never on the event loop the lease renewal and probes
share.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from pykueue.controller.serving import certs
from pykueue.controller.serving import limits as serving
from pykueue.controller.webhooks import admission, conversion, names
from pykueue.controller.webhooks.default_queues import DefaultQueues, Namespaces
from pykueue.controller.webhooks.managed_by import MultiKueueQueues
from pykueue.engine.model import DEFAULT_MANAGED_JOBS_NAMESPACES, LabelSelector
from pykueue.jobs import managed
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.resources import Resource

log = logging.getLogger("pykueue.webhooks")

SECRET = Resource("", "v1", "secrets", "Secret", True)
MUTATING = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                    "MutatingWebhookConfiguration", False)
VALIDATING = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                      "ValidatingWebhookConfiguration", False)
CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
API_SERVICE = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", False)
JSON_PATCH = "application/json-patch+json"
WORKERS = 2  # threads for reviews: a long conversion on one leaves the other for admission
INTERNAL_ERROR = "internal error in the webhook; the controller's log has the details"


@dataclass
class Options:
    """``pykueue controller``'s webhook flags."""

    port: int = names.PORT
    host: str = ""  # every interface
    cert_dir: Path | None = None  # None: a fresh private directory (certs.default_parent), removed at stop
    secret: str | None = None
    namespace: str = names.NAMESPACE
    service: str = names.SERVICE
    url: str | None = None  # where the API server reaches this server, when not through the Service
    sync_seconds: float = 60.0
    manage_jobs_without_queue_name: bool = False
    # managedJobsNamespaceSelector (None: every namespace): the job webhooks match it against namespaces' labels
    managed_jobs_namespace_selector: LabelSelector | None = DEFAULT_MANAGED_JOBS_NAMESPACES
    frameworks: tuple[str, ...] = ("batch/job",)  # integrations.frameworks: which kinds the webhooks mutate
    visibility: bool = False  # the visibility API is served: name its Service, patch its APIServices' caBundle
    serve: bool = True  # listen for webhooks; False keeps only the certificates (for the visibility API)

    @property
    def visibility_service(self) -> str:
        return names.visibility_service(self.service)

    @property
    def dns_names(self) -> tuple[str, ...]:
        """The webhook Service's names (and loopback), then the visibility Service's when it is served."""
        own = certs.service_names(self.service, self.namespace)
        if not self.visibility:
            return own
        other = certs.service_names(self.visibility_service, self.namespace)
        return (*own, *(n for n in other if n not in own))


class CertManager:
    """Certificates in their store, and their CA in every clientConfig that trusts this server."""

    def __init__(self, kube: Kube, options: Options, directory: Path) -> None:
        self.kube = kube
        self.options = options
        self.directory = directory  # private (0700): where the TLS server reads its files
        self.bundle: certs.Bundle | None = None
        self._missing: set[str] = set()  # configurations and CRDs reported absent (logged once)

    # ---- the certificates -------------------------------------------------------------------------

    async def _read(self) -> tuple[certs.Bundle | None, dict[str, Any] | None]:
        if not self.options.secret:  # only what this process made: a bundle found on disk is never trusted
            return self.bundle, None
        try:
            secret = await self.kube.get(SECRET, self.options.secret, self.options.namespace)
        except ApiError as exc:
            if exc.status == 404:
                raise RuntimeError(f"the Secret {self.options.namespace}/{self.options.secret} for the webhook "
                                   "certificates does not exist (the chart creates it)") from None
            raise
        return certs.Bundle.from_data(secret.get("data")), secret

    async def _write(self, bundle: certs.Bundle, secret: dict[str, Any] | None) -> bool:
        """Store a renewed bundle; False when another replica renewed the Secret first."""
        if secret is None:
            certs.write_dir(self.directory, bundle)
            return True
        secret = {**secret, "data": {**(secret.get("data") or {}), **bundle.as_data()}}
        try:
            await self.kube.replace(SECRET, secret)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    async def ensure(self) -> bool:
        """The current bundle, renewed (and stored) when it must be; True when it changed."""
        bundle, secret = await self._read()
        reason = certs.renewal_reason(bundle, self.options.dns_names)
        if reason is not None:
            renewed = certs.renew(bundle, self.options.dns_names)
            if await self._write(renewed, secret):
                log.info("webhook certificate renewed", extra={"fields": {
                    "reason": reason, "store": self.store_name(), "caChanged": bundle is None or
                    renewed.ca_cert != bundle.ca_cert}})
                bundle = renewed
            else:  # lost the race: take the winner's
                bundle, _ = await self._read()
                if bundle is None or certs.renewal_reason(bundle, self.options.dns_names) is not None:
                    raise RuntimeError("the webhook certificate Secret changed while it was renewed; retrying")
        assert bundle is not None
        if secret is not None:  # the TLS server reads files: the pod's own copy
            certs.write_dir(self.directory, bundle, with_ca_key=False)
        changed = bundle != self.bundle
        self.bundle = bundle
        return changed

    def store_name(self) -> str:
        if self.options.secret:
            return f"secret/{self.options.namespace}/{self.options.secret}"
        return str(self.directory)

    # ---- the CA bundle where the API server needs it -----------------------------------------------

    def _client_config(self, current: dict[str, Any] | None, path: str | None) -> dict[str, Any]:
        assert self.bundle is not None
        current = dict(current or {})
        if self.options.url:
            return {"url": self.options.url.rstrip("/") + (path or ""), "caBundle": self.bundle.ca_bundle}
        return {**current, "caBundle": self.bundle.ca_bundle}

    @staticmethod
    def _path(client_config: dict[str, Any] | None, fallback: str | None) -> str | None:
        """The path a clientConfig calls: its Service's, or its URL's, or ours by the webhook's name."""
        config = client_config or {}
        service = config.get("service") or {}
        if service.get("path"):
            return service["path"]
        url = config.get("url") or ""
        if "://" in url:
            rest = url.split("://", 1)[1]
            return "/" + rest.split("/", 1)[1] if "/" in rest else fallback
        return fallback

    async def _get(self, res: Resource, name: str) -> dict[str, Any] | None:
        try:
            obj = await self.kube.get(res, name)
        except ApiError as exc:
            if exc.status != 404:
                raise
            if name not in self._missing:
                log.info("not installed: no CA bundle to patch", extra={"fields": {"kind": res.kind, "name": name}})
                self._missing.add(name)
            return None
        self._missing.discard(name)
        return obj

    async def _inject_configuration(self, res: Resource, name: str, hooks: tuple[names.Hook, ...]) -> None:
        obj = await self._get(res, name)
        if obj is None:
            return
        ours = {h.name: h.path for h in hooks}
        ops: list[dict[str, Any]] = []
        for i, webhook in enumerate(obj.get("webhooks") or []):
            current = webhook.get("clientConfig") or {}
            wanted = self._client_config(current, self._path(current, ours.get(webhook.get("name", ""))))
            if wanted != current:
                ops += [{"op": "test", "path": f"/webhooks/{i}/name", "value": webhook.get("name")},
                        {"op": "replace", "path": f"/webhooks/{i}/clientConfig", "value": wanted}]
        if ops:
            await self.kube.request("PATCH", res.path(None, name), body=ops, content_type=JSON_PATCH)
            log.info("CA bundle patched", extra={"fields": {"kind": res.kind, "name": name,
                                                           "webhooks": len(ops) // 2}})

    async def _inject_crd(self, name: str) -> None:
        obj = await self._get(CRD, name)
        if obj is None:
            return
        conversion_spec = (obj.get("spec") or {}).get("conversion") or {}
        if conversion_spec.get("strategy") != "Webhook":
            return
        current = (conversion_spec.get("webhook") or {}).get("clientConfig") or {}
        wanted = self._client_config(current, self._path(current, names.CONVERT_PATH))
        if wanted != current:
            ops = [{"op": "replace", "path": "/spec/conversion/webhook/clientConfig", "value": wanted}]
            await self.kube.request("PATCH", CRD.path(None, name), body=ops, content_type=JSON_PATCH)
            log.info("CA bundle patched", extra={"fields": {"kind": "CustomResourceDefinition", "name": name}})

    async def _inject_api_service(self, name: str) -> None:
        """The visibility API's APIService: its caBundle (it always calls a Service, never a URL)."""
        obj = await self._get(API_SERVICE, name)
        if obj is None or not (obj.get("spec") or {}).get("service"):
            return
        assert self.bundle is not None
        spec = obj["spec"]
        if spec.get("caBundle") != self.bundle.ca_bundle and not spec.get("insecureSkipTLSVerify"):
            ops = [{"op": "add", "path": "/spec/caBundle", "value": self.bundle.ca_bundle}]
            await self.kube.request("PATCH", API_SERVICE.path(None, name), body=ops, content_type=JSON_PATCH)
            log.info("CA bundle patched", extra={"fields": {"kind": "APIService", "name": name}})

    async def inject(self) -> None:
        if self.options.serve:  # webhooks nobody serves are left as they are
            mutating, validating = names.configuration_names(self.options.service)
            await self._inject_configuration(MUTATING, mutating, names.MUTATING)
            await self._inject_configuration(VALIDATING, validating, names.VALIDATING + names.VALIDATING_JOBS)
            for plural in names.CONVERTED_PLURALS:
                await self._inject_crd(names.crd_name(plural))
        if self.options.visibility:
            from pykueue.controller.visibility.api import API_SERVICES

            for name in API_SERVICES:
                await self._inject_api_service(name)


Handler = Callable[[dict[str, Any]], dict[str, Any]]


def answer(raw: bytes, handle: Handler, path: str) -> tuple[int, bytes]:
    """A review's body in, (status, body) out: 400 with the reason for what is not a review, else the
    review with ``handle``'s response. Runs on a worker thread."""
    try:
        review = orjson.loads(raw)
        request = review["request"]
    except (ValueError, KeyError, TypeError) as exc:
        return 400, f"not a review: {exc}".encode()
    del raw
    started = time.perf_counter()
    out = handle(request)
    log.debug("webhook", extra={"fields": {"path": path, "uid": request.get("uid"),
                                           "ms": round((time.perf_counter() - started) * 1000, 1)}})
    return 200, orjson.dumps({"apiVersion": review.get("apiVersion"), "kind": review.get("kind"), "response": out})


class WebhookServer:
    """The HTTPS server and the certificate loop, started before the controller's informers."""

    def __init__(self, kube: Kube, options: Options) -> None:
        self.options = options
        self.fresh = options.cert_dir is None  # a directory of our own, removed at stop
        self.directory = certs.private_dir(options.cert_dir) if options.cert_dir is not None else \
            certs.fresh_dir(certs.default_parent())
        self.certs = CertManager(kube, options, self.directory)
        self.context: ssl.SSLContext | None = None
        self.listener: serving.Listener | None = None
        self.limits = serving.Limits(serving.WEBHOOKS)
        self.work = serving.Work(WORKERS, "webhook")
        self.port = options.port
        self.listeners: list[Callable[[], None]] = []  # called after the certificate files changed
        # LocalQueueDefaulting for the job webhooks: which namespaces have a LocalQueue named default; and
        # the namespaces' labels for managedJobsNamespaceSelector
        jobs = options.serve and bool(options.frameworks)
        self.default_queues = DefaultQueues(kube) if jobs else None
        self.namespaces = Namespaces(kube) if jobs else None
        # spec.managedBy defaulting: which LocalQueues feed a ClusterQueue with a MultiKueue check
        self.multikueue = MultiKueueQueues(kube, self.default_queues.informer) if self.default_queues else None
        self.scope = managed.Scope(options.managed_jobs_namespace_selector, self.namespace_labels)
        self._task: asyncio.Task | None = None

    def app(self) -> web.Application:
        manage_all = self.options.manage_jobs_without_queue_name
        app = self.limits.application()
        frameworks = self.options.frameworks
        for hook in names.MUTATING:
            # a kind whose integration is off is let through as sent (upstream's no-op webhook)
            mutate = admission.mutator(hook.kind, frameworks, manage_all, self.default_queue_exists, self.scope,
                                       self.multikueue.dispatches if self.multikueue is not None else None)
            app.router.add_post(hook.path, self._admission(mutate))
        for hook in names.VALIDATING:
            app.router.add_post(hook.path, self._admission(admission.validate))
        for hook in names.VALIDATING_JOBS:
            # the Job's rules while its integration is on; a hook left registered for it otherwise allows
            validate_job = admission.validator_for_jobs(hook.kind, frameworks, self.default_queue_exists, manage_all)
            app.router.add_post(hook.path, self._admission(validate_job))
        app.router.add_post(names.CONVERT_PATH, self._review(lambda r: conversion.review(r, serving.let_loop_run)))
        app.router.add_get("/healthz", self._healthz)
        return app

    @staticmethod
    async def _healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _review(self, handle: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        """An AdmissionReview or ConversionReview endpoint: the request's ``request``, our ``response``;
        the body (read by ``serving.Limits`` before this runs) is parsed, handled and encoded on a worker
        thread once one is free."""
        async def endpoint(http: web.Request) -> web.Response:
            path = http.path
            status, body = await self.work.run(http.read, lambda raw: answer(raw, handle, path))
            if status != 200:
                return web.Response(status=status, body=body, content_type="text/plain")
            return web.Response(body=body, content_type="application/json")
        return endpoint

    def _admission(self, handle: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        def guarded(request: dict[str, Any]) -> dict[str, Any]:
            try:
                out = handle(request)
            except Exception as exc:  # noqa: BLE001 - a bug answers 500 (the failurePolicy decides), not a hang
                log.exception("webhook failed", extra={"fields": {"error": str(exc)}})
                return admission.response(request, False, INTERNAL_ERROR, code=500)
            if not out["allowed"]:
                obj = request.get("object") or {}
                log.info("admission refused", extra={"fields": {
                    "kind": obj.get("kind"), "name": (obj.get("metadata") or {}).get("name"),
                    "operation": request.get("operation"), "message": out["status"]["message"]}})
            return out
        return self._review(guarded)

    def _load(self) -> None:
        assert self.context is not None
        directory = self.directory
        self.context.load_cert_chain(str(directory / "tls.crt"), str(directory / "tls.key"))

    def default_queue_exists(self, namespace: str) -> bool:
        return self.default_queues is not None and self.default_queues.exists(namespace)

    def namespace_labels(self, name: str) -> dict[str, Any] | None:
        return None if self.namespaces is None else self.namespaces.labels(name)

    async def start(self) -> None:
        """Certificates first (the server cannot start without them), then the LocalQueues the job
        webhooks read, then HTTPS, then the CA bundles."""
        await self.certs.ensure()
        for cache in (self.default_queues, self.namespaces, self.multikueue):
            if cache is not None:
                await cache.start()
        if self.options.serve:
            self.context = serving.server_context()
            self._load()
            self.listener = serving.Listener(self.app(), self.limits, self.options.host, self.options.port,
                                             ssl_context=self.context)
            await self.listener.start()
            self.port = self.listener.port  # the bound port, when 0 asked for any
        await self.certs.inject()
        self._task = asyncio.create_task(self._loop(), name="webhook-certs")
        log.info("webhook server ready" if self.options.serve else "serving certificates ready",
                 extra={"fields": {"port": self.port if self.options.serve else 0,
                                   "certificates": self.certs.store_name(), "url": self.options.url or ""}})

    async def _loop(self) -> None:
        """Renew before expiry, reload the TLS context when the certificate changed, re-patch bundles."""
        failures = 0
        while True:
            await asyncio.sleep(self.options.sync_seconds if not failures else min(2.0 ** failures, 60.0))
            try:
                if await self.certs.ensure():
                    if self.context is not None:
                        self._load()
                    for listener in self.listeners:
                        listener()
                    log.info("webhook server certificate reloaded")
                await self.certs.inject()
                failures = 0
            except Exception as exc:  # noqa: BLE001 - the API server is away: try again, never stop serving
                failures += 1
                log.warning("webhook certificates not synced; retrying", extra={"fields": {"error": str(exc)}})

    async def stop(self) -> None:
        for cache in (self.default_queues, self.namespaces, self.multikueue):
            if cache is not None:
                await cache.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
        self.work.close()
        if self.fresh:
            shutil.rmtree(self.directory, ignore_errors=True)
