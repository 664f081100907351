"""``pykueue dashboard --kubeconfig FILE [--listen 127.0.0.1:8090]``: the live dashboard on its own."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykueue.engine import model

DEFAULT_LISTEN = "127.0.0.1:8090"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dashboard", help="a live web page of the queues, their quota and why each workload waits",
        description="Serve a read-only web page that follows the API server's watch: the cohort tree with each "
                    "ClusterQueue's quota and usage, its workloads in admission order with Kueue's pending "
                    "reasons, a page per workload with what would admit it, and a what-if box.")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig to use (default: $KUBECONFIG, ~/.kube/config, "
                   "or the pod's service account)")
    p.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"address to serve on (default: {DEFAULT_LISTEN}; an empty HOST is still 127.0.0.1, name "
                        "0.0.0.0 to open it to the network; port 0 picks a free one). Only the URL printed at start, "
                        "with its token, lets a browser in")
    p.add_argument("--config", metavar="FILE",
                   help="the Kueue Configuration the controller runs with (fair sharing, preemption settings), "
                        "for the engine's answers")


async def serve_embedded(*args: Any, **kwargs: Any) -> Any:
    """``embed.serve``, imported when the controller is asked for a dashboard."""
    from pykueue.dashboard.embed import serve

    return await serve(*args, **kwargs)


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); ValueError with the reason."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _fail(message: str) -> int:
    print(f"pykueue dashboard: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    try:
        host, port = parse_listen(args.listen)
    except ValueError as exc:
        return _fail(str(exc))
    from pykueue.controller.command import load_config

    config = load_config(args.config)
    if config is None:
        return 2
    import asyncio  # here, not at the top: every `pykueue` command imports this module for its options

    try:
        return asyncio.run(_serve(args.kubeconfig, args.context, host, port, config))
    except KeyboardInterrupt:
        return 130


async def _serve(kubeconfig: str | None, context: str | None, host: str, port: int, config: model.Config) -> int:
    import asyncio
    import dataclasses
    import signal

    from pykueue.controller.serving import limits as serving
    from pykueue.dashboard.guard import Guard
    from pykueue.dashboard.server import Dashboard
    from pykueue.dashboard.state import Feed, Hub
    from pykueue.kube import resources as r
    from pykueue.kubectl.client import Session, load
    from pykueue.kubectl.errors import ApiStatus, CliError

    try:
        session = Session(await load(kubeconfig, context))
    except CliError as exc:
        return _fail(str(exc))
    try:
        try:  # one request first: an unreachable server or missing CRDs is one line, not a page of retries
            await session.list(r.CLUSTER_QUEUE)
        except (CliError, ApiStatus) as exc:
            return _fail(str(exc))
        hub = Hub()
        feed = Feed(session.kube, hub)
        guard = Guard(host, port)
        dashboard = Dashboard(lambda: feed.objects, hub, config, unreadable=lambda: feed.unreadable,
                              pod=feed.pod, root=guard.root)
        # the pages are under the session path, so is the event stream that is not timed
        limits = serving.Limits(dataclasses.replace(serving.DASHBOARD, long_running=frozenset(
            guard.root + path.lstrip("/") for path in serving.DASHBOARD.long_running)))
        app = guard.app(dashboard.app((limits.bodies,)), (limits.middleware,))
        listener = serving.Listener(app, limits, host, port, shutdown_timeout=1.0)
        try:
            try:
                await listener.start()
            except OSError as exc:
                return _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
            await feed.start()
            guard.port = listener.port
            print(f"pykueue dashboard: serving {guard.url(host)} (read-only; Ctrl-C stops)", flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()
        finally:
            await feed.stop()
            await listener.stop()
    finally:
        await session.close()
    return 0
