"""The dashboard served by the controller (``pykueue controller --dashboard-port``).

The controller must not import the dashboard (the dashboard reads the simulator, and the simulator and
the controller are independent drivers), so the CLI hands this ``serve`` to the controller's command as
a plain callable; the controller passes its API connection, its Configuration, and the HTTPS context
and authentication middleware its other ports use. A POST from another site is refused as the
standalone dashboard refuses it (``guard.same_site_writes``).
"""

from __future__ import annotations

import ssl
from typing import Any

from pykueue.controller.serving import limits as serving
from pykueue.dashboard.guard import same_site_writes
from pykueue.dashboard.server import Dashboard
from pykueue.dashboard.state import Feed, Hub
from pykueue.engine import model
from pykueue.kube.client import Kube


class Served:
    """A running dashboard: its watches and its listener, stopped together."""

    def __init__(self, feed: Feed, listener: serving.Listener) -> None:
        self.feed = feed
        self.listener = listener
        self.port = listener.port

    async def stop(self) -> None:
        await self.feed.stop()
        await self.listener.stop()


def app_middlewares(limits: serving.Limits, middlewares: tuple[Any, ...]) -> tuple[Any, ...]:
    """The bounds first, then the standalone dashboard's check of a POST's origin (a cross-site form
    is refused before it costs a TokenReview), then the controller's authentication, then the body
    read (only a caller let in has it read)."""
    return (limits.middleware, same_site_writes, *middlewares, limits.bodies)


async def serve(kube: Kube, config: model.Config, *, host: str, port: int, middlewares: tuple[Any, ...] = (),
                ssl_context: ssl.SSLContext | None = None) -> Served:
    """Listen (a port in use fails here, at start-up), then start the watches in the background: the
    pages fill in as each kind is listed, and the controller's own start never waits on them."""
    hub = Hub()
    feed = Feed(kube, hub)
    dashboard = Dashboard(lambda: feed.objects, hub, config, unreadable=lambda: feed.unreadable,
                          pod=feed.pod)
    limits = serving.Limits(serving.DASHBOARD)
    listener = serving.Listener(dashboard.app(app_middlewares(limits, middlewares)), limits, host, port,
                                ssl_context=ssl_context, shutdown_timeout=1.0)
    await listener.start()
    feed.begin()
    return Served(feed, listener)
