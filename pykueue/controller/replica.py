"""One controller process (``pykueue controller``): its probes and /metrics served, then the controller
run at once or, with leader election, while this replica holds the Lease (controller-runtime's manager
with ``LeaderElection``: a standby serves its probes and waits). Composition only: the election is
``runtime.leader``, the servers ``observe.health``, the controller ``manager``."""

from __future__ import annotations

import copy
import logging
from typing import Any

from pykueue.controller.runtime.leader import (
    LeaderElectionLost,
    LeaderElector,
    default_namespace,
    run_as_leader,
)
from pykueue.kube.client import Kube

log = logging.getLogger("pykueue.leader")



async def run_replica(kube: Kube, config: Any, *, metrics_address: str = ":8443", probe_address: str = ":8081",
                      leader_elect: bool = False, namespace: str | None = None,
                      controllers: list[Any] | None = None, metrics_secure: Any = None) -> int:
    """Serve /metrics and the probes, then run the controller: at once, or while holding the Lease.
    1 when the Lease is lost (the pod restarts and comes back as a standby), else until cancelled.
    ``controllers`` (when given) receives the Controller once this replica runs one (the visibility API's).
    ``metrics_secure`` (a health.SecureServing): /metrics over HTTPS behind authentication and
    authorization; None for plain HTTP."""
    from pykueue.controller.manager import Controller
    from pykueue.controller.observe.health import CONTENT_TYPE_PROMETHEUS, Probes, Server
    from pykueue.controller.observe.metrics import Metrics
    from pykueue.controller.serving import limits as serving

    controllers = [] if controllers is None else controllers
    elector = LeaderElector(kube, namespace or default_namespace()) if leader_elect else None

    def role() -> str:
        """upstream's replica_role: standalone without leader election, else leader or follower."""
        return "standalone" if elector is None else "leader" if elector.leading else "follower"

    metrics, probes = Metrics(role), Probes()

    def ready() -> bool:
        """controller-runtime's: a synced leader, or a standby that reaches the API server."""
        if controllers:
            return controllers[-1].ready.is_set()
        return elector is not None and elector.observed.is_set() and not elector.leading

    probes.ready = ready
    servers = [
        Server("metrics", metrics_address, {"/metrics": lambda: (200, metrics.exposition(), CONTENT_TYPE_PROMETHEUS)},
               bounds=serving.METRICS, secure=metrics_secure),
        Server("health", probe_address, {"/healthz": probes.healthz, "/readyz": probes.readyz}, bounds=serving.PROBES),
    ]

    async def work() -> None:
        # elected: every write of the controller is checked against the Lease first (the elector's own
        # renewals and release go out on the unguarded client)
        writer = kube if elector is None else kube.guarded(elector.check_leading)
        # upstream reads its MultiKueue Secrets in Configuration.namespace; without one, the pod's
        controller = Controller(writer, config, metrics=metrics, namespace=config.namespace or default_namespace())
        controllers.append(controller)
        await controller.run()

    try:
        for server in servers:
            try:
                await server.start()
            except OSError as exc:  # the port is taken: fail at start, as controller-runtime does
                log.error("cannot listen", extra={"fields": {"server": server.name, "error": str(exc)}})
                return 1
        if elector is None:
            await work()
        else:
            await run_as_leader(elector, work, lambda: Kube.from_configuration(copy.deepcopy(kube.api.configuration)))
    except LeaderElectionLost:
        return 1
    finally:
        for server in servers:
            await server.stop()
    return 0
