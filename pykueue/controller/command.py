"""`pykueue controller`: run the engine against a Kubernetes API server."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykueue.engine import model


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("controller", help="run Kueue's admission against a Kubernetes API server",
                       description="Admit Jobs and Workloads on a real cluster with the simulator's engine.")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig to use (default: the pod's service account)")
    p.add_argument("--config", metavar="FILE", help="a Kueue Configuration (config.kueue.x-k8s.io)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                   help="the least severe records written (default: info, one line per decision)")
    p.add_argument("--log-format", default="logfmt", choices=("logfmt", "json"),
                   help="one structured line per record: key=value (default) or JSON")
    p.add_argument("--metrics-bind-address", default=":8443", metavar="ADDR",
                   help="serve Prometheus metrics on /metrics at [HOST]:PORT, 0 for none (default: :8443)")
    p.add_argument("--metrics-secure", nargs="?", const=True, default=True, type=_flag, metavar="BOOL",
                   help="serve /metrics over HTTPS to callers the API server authenticates (TokenReview) and "
                        "authorizes (SubjectAccessReview: get on the non-resource URL /metrics); false for plain, "
                        "open HTTP (default: true)")
    p.add_argument("--health-probe-bind-address", default=":8081", metavar="ADDR",
                   help="serve /healthz and /readyz (plain HTTP, unauthenticated, nothing else) at [HOST]:PORT, "
                        "0 for none (default: :8081)")
    p.add_argument("--leader-elect", nargs="?", const=True, default=False, type=_flag, metavar="BOOL",
                   help="admit only while holding the Lease c1f6bfd2.kueue.x-k8s.io, so one of several "
                        "replicas admits and the others stand by (default: false)")
    p.add_argument("--leader-election-namespace", metavar="NS",
                   help="namespace of the Lease (default: the pod's, else pykueue-system)")
    p.add_argument("--dashboard-port", type=_port, default=0, metavar="PORT",
                   help="serve the live dashboard (as `pykueue dashboard`) over HTTPS on this port to callers the "
                        "API server authenticates (client certificate or bearer token) and authorizes "
                        "(SubjectAccessReview: get, or post for the what-if box, on the non-resource URL "
                        "/dashboard/...), 0 for none (default: 0)")
    p.add_argument("--dashboard-host", default="", metavar="ADDR",
                   help="address the dashboard binds (default: every interface)")
    w = p.add_argument_group("webhooks", "admission and CRD conversion webhooks, served over TLS with "
                             "certificates the controller makes and renews itself")
    w.add_argument("--webhook-port", type=int, default=9443, metavar="PORT",
                   help="serve the webhooks on this port, 0 for none (default: 9443)")
    w.add_argument("--webhook-host", default="", metavar="ADDR", help="address to bind (default: every interface)")
    w.add_argument("--webhook-cert-dir", metavar="DIR",
                   help="where the serving certificate is written, a directory made private (0700) to this "
                        "user (default: a fresh one under /tmp in a pod, else under $XDG_RUNTIME_DIR or "
                        "~/.cache/pykueue/certs, removed at exit)")
    w.add_argument("--webhook-secret", metavar="NAME",
                   help="keep the CA and certificate in this Secret of the webhook namespace, shared by "
                        "replicas and restarts (the chart's; default: made at each start, kept in memory)")
    w.add_argument("--webhook-service", default="pykueue-webhook-service", metavar="NAME",
                   help="the webhook Service, named by the certificate; the webhook configurations are "
                        "<name without -webhook-service>-{mutating,validating}-webhook-configuration")
    w.add_argument("--webhook-namespace", metavar="NS",
                   help="namespace of the Service and Secret (default: the pod's, else pykueue-system)")
    w.add_argument("--webhook-url", metavar="URL",
                   help="a controller outside the cluster: point the webhook configurations and the CRDs' "
                        "conversion at this base URL (e.g. https://127.0.0.1:9443) instead of the Service")
    w.add_argument("--local-webhooks", choices=("auto", "on", "off"), default="auto",
                   help="register the webhooks for this controller's own URL (--webhook-url, else "
                        "https://127.0.0.1:PORT, listening on 127.0.0.1): the configurations are created "
                        "unless an install made them, the CRDs' conversion points at it, and the visibility API "
                        "is registered while served (auto: on with --kubeconfig, that is outside the cluster, "
                        "when the API server is on this machine or --webhook-url is given)")
    v = p.add_argument_group("visibility", "the visibility API (visibility.kueue.x-k8s.io), served over TLS on "
                             "its own port with the webhook server's certificates, to callers the API server "
                             "authenticates and authorizes")
    v.add_argument("--visibility-port", type=_port, default=8082, metavar="PORT",
                   help="serve the visibility API on this port, 0 for none (default: 8082, upstream's "
                        "visibilityServer.bindPort)")
    v.add_argument("--visibility-bind-address", default="", metavar="ADDR",
                   help="address to bind (default: every interface, as upstream's 0.0.0.0; 127.0.0.1 for a "
                        "controller that registers its own webhooks)")
    w.add_argument("--webhooks-on-stop", choices=("remove", "fail-open", "keep"), default="remove",
                   help="what the configurations --local-webhooks registered become when the controller "
                        "stops: deleted (default), failurePolicy Ignore, or left failing closed as upstream's")


def _logger(name: str) -> Any:
    """``logging.getLogger(name)``, importing logging only here: the CLI imports this module for its
    arguments on every run, and ``simulate`` logs nothing."""
    import logging

    return logging.getLogger(name)


def _port(text: str) -> int:
    """A TCP port, or 0 for none."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0-65535): {text!r}")
    return value


def _flag(text: str) -> bool:
    """A Go-style boolean flag value: --leader-elect, --leader-elect=true, --leader-elect=false."""
    value = text.strip().lower()
    if value not in ("true", "false", "1", "0", "t", "f"):
        raise argparse.ArgumentTypeError(f"not a boolean: {text!r}")
    return value in ("true", "1", "t")


def load_config(path: str | None) -> model.Config | None:
    """The Kueue Configuration at ``path`` (upstream's defaults without one); None once each problem
    with it is printed, one line each, for the caller to exit 2 (the dashboard reads it the same way)."""
    if path is None:
        return model.Config()
    from pykueue.api.loader import load_paths

    inputs, problems = load_paths([], path)
    for problem in problems:
        print(problem, file=sys.stderr)
    return None if problems else inputs.config


def not_integrated(config: model.Config) -> str | None:
    """What to say when the Configuration lists a Kueue integration pykueue does not have yet: the
    controller does not start, since those jobs would run outside any quota (None when all are its)."""
    from pykueue.jobs import registry

    listed = [f for f in config.frameworks if f not in registry.FRAMEWORKS]
    if not listed:
        return None
    names = ", ".join(f'"{f}"' for f in listed)
    known = ", ".join(f'"{f}"' for f in registry.FRAMEWORKS)
    return (f"{names}: Kueue integrates it but pykueue does not yet (its jobs would run outside any quota); "
            f"pykueue integrates {known}")


def run(args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: every `pykueue` command imports this module for its options

    from pykueue.controller.runtime import logs

    logs.setup(args.log_level, getattr(args, "log_format", "logfmt"))
    config = load_config(args.config)
    if config is None:
        return 2
    if missing := not_integrated(config):
        print(f"{args.config}: integrations.frameworks: {missing}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(args.kubeconfig, config, args))
    except KeyboardInterrupt:
        return 130


async def _main(kubeconfig: str | None, config: model.Config, args: argparse.Namespace | None = None) -> int:
    import asyncio
    import signal

    from pykueue.controller.replica import run_replica
    from pykueue.kube.client import Kube

    try:
        kube = await Kube.connect(kubeconfig)
    except Exception as exc:  # noqa: BLE001 - a bad kubeconfig is one line, not a traceback
        print(f"pykueue: error: cannot connect to the API server: {exc}", file=sys.stderr)
        return 2
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    webhooks = visibility = dashboard = None
    local = None  # the configurations registered for this controller's own URL (--local-webhooks)
    controllers: list = []  # the Controller once this replica runs one: the visibility API reads it
    auth = _auth(kube, args)
    try:
        if auth is not None:
            await auth.start()  # the client CAs are known before the first request
        webhooks = await _webhooks(kube, config, args)  # every replica, leader or not
        visibility = await _visibility(kube, args, webhooks, auth, controllers)
        local = await _register_local(kube, webhooks, visibility, args)
        try:
            dashboard = await _dashboard(kube, config, args, auth)
        except OSError as exc:
            print(f"pykueue: error: dashboard: {exc.strerror or exc}", file=sys.stderr)
            return 2
        metrics_address = getattr(args, "metrics_bind_address", ":8443")
        secure = None
        if auth is not None and getattr(args, "metrics_secure", True) and metrics_address not in ("", "0"):
            from pykueue.controller.observe.health import SecureServing
            from pykueue.controller.serving.certs import CertDirError

            try:
                secure = SecureServing.self_signed(auth)
            except (OSError, CertDirError) as exc:
                print(f"pykueue: error: metrics certificate: {exc}", file=sys.stderr)
                return 2
        return await run_replica(
            kube, config, controllers=controllers, metrics_address=metrics_address, metrics_secure=secure,
            probe_address=getattr(args, "health_probe_bind_address", ":8081"),
            leader_elect=getattr(args, "leader_elect", False), namespace=getattr(args, "leader_election_namespace", None))
    except asyncio.CancelledError:
        _logger("pykueue.controller").info("stopping")
    except WebhookError as exc:
        print(f"pykueue: error: webhook server: {exc}", file=sys.stderr)
        return 2
    finally:
        if dashboard is not None:
            await dashboard.stop()
        if local is not None:
            await local.unregister()
        if visibility is not None:
            await visibility.stop()
        if webhooks is not None:
            await webhooks.stop()
        if auth is not None:
            await auth.stop()
        await kube.close()
    return 0


def _auth(kube, args: argparse.Namespace | None):
    """The delegated authenticator the visibility API and the secure metrics share; None when
    neither is served."""
    if args is None:
        return None
    visibility = bool(getattr(args, "visibility_port", 0))
    metrics = getattr(args, "metrics_secure", True) and getattr(args, "metrics_bind_address", ":8443") not in ("", "0")
    if not visibility and not metrics and not _dashboard_wanted(args):
        return None
    from pykueue.controller.serving.auth import Delegated

    return Delegated(kube)


def _dashboard_wanted(args: argparse.Namespace | None) -> bool:
    return bool(getattr(args, "dashboard_port", 0)) and getattr(args, "dashboard", None) is not None


async def _dashboard(kube, config: model.Config, args: argparse.Namespace | None, auth):
    """The dashboard on --dashboard-port, HTTPS behind the delegated authentication the visibility API
    and /metrics use; None when not asked. ``args.dashboard`` is its ``serve``, handed in by the CLI:
    the controller does not import the dashboard (it reads the simulator, another driver)."""
    if not _dashboard_wanted(args) or auth is None:
        return None
    from pykueue.controller.observe.health import SecureServing
    from pykueue.controller.serving import auth as delegated

    def guard(request) -> delegated.Attributes:
        """A non-resource URL under /dashboard: `get` to look, `post` to ask the what-if box."""
        verb = "get" if request.method in ("GET", "HEAD") else request.method.lower()
        return delegated.Attributes(verb, path="/dashboard" + request.path.rstrip("/"))

    secure = SecureServing.self_signed(auth)
    delegated.trust_client_cas(secure.context, auth)
    try:
        served = await args.dashboard(kube, config, host=args.dashboard_host, port=args.dashboard_port,
                                      middlewares=(delegated.middleware(auth, guard),), ssl_context=secure.context)
    except OSError:
        secure.close()
        raise
    _logger("pykueue.controller").info("serving", extra={"fields": {
        "server": "dashboard", "address": f"{args.dashboard_host}:{served.port}", "scheme": "https"}})
    return _Closing(served, secure)


class _Closing:
    """A served dashboard and its certificate directory, removed together."""

    def __init__(self, served, secure) -> None:
        self.served, self.secure = served, secure

    async def stop(self) -> None:
        await self.served.stop()
        self.secure.close()


class WebhookError(Exception):
    """The webhook server could not start (port taken, no certificate store): one line, exit 2."""


async def _webhooks(kube, config: model.Config, args: argparse.Namespace | None):
    """The webhook server and its certificates, started before the controller's informers; None with
    --webhook-port 0 and --visibility-port 0 (with only the first 0 it keeps the certificates the
    visibility server serves, without listening)."""
    port = getattr(args, "webhook_port", 0) if args is not None else 0
    visibility_port = getattr(args, "visibility_port", 0) if args is not None else 0
    if not port and not visibility_port:
        return None
    from pathlib import Path

    from pykueue.controller.runtime.leader import default_namespace
    from pykueue.controller.serving.certs import CertDirError
    from pykueue.controller.webhooks.server import Options, WebhookServer
    from pykueue.kube.client import ApiError

    url, host = args.webhook_url, args.webhook_host
    if port and _local(args, kube.api.configuration.host):  # outside the cluster: called at loopback only
        from pykueue.controller.webhooks.local import LOOPBACK, local_url

        url, host = url or local_url(port), host or LOOPBACK
    options = Options(
        port=port, host=host, cert_dir=Path(args.webhook_cert_dir) if args.webhook_cert_dir else None,
        secret=args.webhook_secret, namespace=args.webhook_namespace or default_namespace(),
        service=args.webhook_service, url=url,
        manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
        managed_jobs_namespace_selector=config.managed_jobs_namespace_selector, visibility=bool(visibility_port),
        frameworks=tuple(config.frameworks), serve=bool(port))
    try:
        server = WebhookServer(kube, options)
    except (OSError, CertDirError) as exc:
        raise WebhookError(str(exc)) from None
    try:
        await server.start()
    except (OSError, RuntimeError, ApiError) as exc:
        await server.stop()
        raise WebhookError(str(exc)) from None
    return server


async def _visibility(kube, args: argparse.Namespace | None, webhooks, auth, controllers: list):
    """The visibility API's server on --visibility-port, answering from the last Controller in
    ``controllers`` (none on a standby: 503) to callers ``auth`` lets in; None when not served."""
    port = getattr(args, "visibility_port", 0) if args is not None else 0
    if not port or webhooks is None or auth is None:
        return None
    from pykueue.controller.visibility.server import VisibilityOptions, VisibilityServer

    host = getattr(args, "visibility_bind_address", "") or ""
    if not host and _local(args, kube.api.configuration.host):
        from pykueue.controller.webhooks.local import LOOPBACK

        host = LOOPBACK  # as the webhooks: the API server on this machine calls it at loopback
    server = VisibilityServer(VisibilityOptions(port=port, host=host), webhooks, auth,
                              lambda: controllers[-1] if controllers else None)
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        raise WebhookError(f"visibility server: {exc}") from None
    return server


def _local(args: argparse.Namespace | None, api_server: str = "") -> bool:
    """Whether this controller registers its webhooks for its own URL (``--local-webhooks``). ``auto``
    is on when it runs from a kubeconfig (outside the cluster) and the API server can call it back: the
    user gave ``--webhook-url``, or the API server runs on this machine (its URL is loopback)."""
    from pykueue.controller.webhooks.local import is_loopback

    mode = getattr(args, "local_webhooks", "off") if args is not None else "off"
    if mode != "auto":
        return mode == "on"
    if not getattr(args, "kubeconfig", None):
        return False
    return bool(getattr(args, "webhook_url", None)) or is_loopback(api_server)


class _Local:
    """What a controller outside the cluster registered for itself, undone together on stop."""

    def __init__(self, parts: list) -> None:
        self.parts = parts

    async def unregister(self) -> None:
        for part in reversed(self.parts):
            await part.unregister()


async def _register_local(kube, server, visibility, args: argparse.Namespace | None):
    """The webhook configurations (and the visibility API, at ``visibility``'s port) registered for this
    controller's URL, or None (in the cluster, or no webhook server)."""
    if server is None or not server.options.serve:
        return None
    if not _local(args, kube.api.configuration.host):
        if getattr(args, "local_webhooks", "off") == "auto" and getattr(args, "kubeconfig", None):
            _logger("pykueue.webhooks").warning(
                "webhooks not registered: the API server is not on this machine and cannot call 127.0.0.1; "
                "give --webhook-url with an address it can reach", extra={"fields": {
                    "apiServer": kube.api.configuration.host}})
        return None
    from pykueue.controller.webhooks.local import (
        LocalVisibility,
        LocalWebhooks,
        is_loopback,
        stale_api_services,
    )
    from pykueue.kube.client import ApiError

    options = server.options
    bundle = server.certs.bundle.ca_bundle
    parts: list = []
    try:
        hooks = LocalWebhooks(kube, options.service, options.namespace, options.url, args.webhooks_on_stop,
                              options.frameworks)
        parts.append(hooks)
        await hooks.register(bundle)
        if visibility is not None:
            from pykueue.controller.visibility.api import API_SERVICES, VERSIONS

            await stale_api_services(kube, API_SERVICES)
            # the aggregator reaches it through an ExternalName Service; not beside an install, whose
            # APIServices and Service these would be (and whose ServiceAccount may not touch Services)
            if is_loopback(options.url) and not hooks.installed:
                local = LocalVisibility(kube, options.visibility_service, options.namespace, visibility.port)
                parts.append(local)
                await local.register(bundle, VERSIONS)
    except ApiError as exc:
        await _Local(parts).unregister()
        raise WebhookError(f"cannot register the webhooks for {options.url}: {exc} (--local-webhooks=off "
                           "runs without them)") from None
    return _Local(parts)
