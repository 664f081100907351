"""MultiKueue's worker connections, kept as upstream's clustersReconciler keeps them: each
MultiKueueCluster's kubeconfig read from its Secret (key ``kubeconfig``) in the controller's namespace,
or, with ``locationType: Path``, from a file on the controller's file system (a mounted volume),
read and checked (``multikueue.kubeconfig``) in a thread, once per content of the Secret, connected, and
its ``Active`` condition written with upstream's reasons (``BadKubeConfig``:
the Secret or its key missing, or the document unreadable; ``InsecureKubeConfig``;
``ClientConnectionFailed``: the worker does not answer; ``Active``: connected). Every worker is probed
every ``PROBE_SECONDS``, which also notices a rotated Secret; a worker that stops answering turns
inactive and remembers since when (the workload side's worker-lost timeout counts from there).
The MultiKueue AdmissionChecks' own ``Active`` condition follows their config's clusters."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from pykueue.api import names
from pykueue.controller.multikueue import adapters, kubeconfig
from pykueue.engine import multikueue as mk
from pykueue.kube import resources as r
from pykueue.kube.client import ApiError, Kube
from pykueue.kube.informer import Informer

log = logging.getLogger("pykueue.controller.multikueue")

PROBE_SECONDS = 2.0
PROBE_TIMEOUT = aiohttp.ClientTimeout(total=5)
SECRET_KEY = "kubeconfig"
MANAGER = "kueue-multikueue"  # the field manager of what this side writes


@dataclass
class Worker:
    """One worker cluster as this manager sees it."""

    name: str
    source: bytes | None = None  # the digest of the kubeconfig it is connected with
    # the digest of the Secret's kubeconfig last read, and what it read as (kept across close())
    checked: tuple[bytes | None, kubeconfig.Settings | kubeconfig.KubeconfigError | None] = (None, None)
    kube: Kube | None = None
    connected: bool = False
    lost_since: float | None = None  # since when it has not been connected (None: connected)
    informers: dict[str, Informer] = field(default_factory=dict)  # remote Workloads and Jobs, by plural
    tasks: list[asyncio.Task] = field(default_factory=list)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()
        self.informers.clear()
        if self.kube is not None:
            await self.kube.close()
        self.kube = None
        self.source = None


def load_secret(encoded: Any) -> kubeconfig.Settings | kubeconfig.KubeconfigError:
    """A Secret's ``data.kubeconfig`` (base64) to the settings of a connection, or the error that says
    why not. Never raises: a failure nothing foresaw is a ``KubeconfigError`` too, with no text of the
    document, so one bad Secret only makes its own MultiKueueCluster inactive."""
    try:
        if not isinstance(encoded, str):
            raise kubeconfig.KubeconfigError("failed to parse kubeconfig: the Secret's value is not a string")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise kubeconfig.KubeconfigError("failed to parse kubeconfig: the Secret's value is not base64") from None
        return kubeconfig.load(data)
    except kubeconfig.KubeconfigError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - defensive: the bounded parser leaves nothing known here
        log.warning("unexpected failure reading a MultiKueue kubeconfig", extra={"fields": {
            "error": type(exc).__name__}})  # its text, or a traceback's, might quote the document
        return kubeconfig.KubeconfigError(f"failed to parse kubeconfig: unexpected {type(exc).__name__}")


LOCATION = "spec.clusterSource.kubeConfig.location"


def read_path(location: object) -> bytes | kubeconfig.KubeconfigError:
    """``locationType: Path``: the file's bytes, read off the event loop, or why not. Only an absolute
    path to a regular file (a FIFO or a device would block or never end), at most ``kubeconfig.MAX_BYTES``
    and one byte more (so a larger file is refused by the parser's bound, not read whole)."""
    if not isinstance(location, str) or not location.startswith("/") or "\x00" in location:
        return kubeconfig.KubeconfigError(f"{LOCATION}: a Path location is an absolute file path")
    try:
        fd = os.open(location, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return kubeconfig.KubeconfigError(f"open {location}: {exc.strerror or type(exc).__name__}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return kubeconfig.KubeconfigError(f"{location}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(kubeconfig.MAX_BYTES + 1)
    except OSError as exc:
        return kubeconfig.KubeconfigError(f"read {location}: {exc.strerror or type(exc).__name__}")
    finally:
        os.close(fd)


def load_file(content: bytes) -> kubeconfig.Settings | kubeconfig.KubeconfigError:
    """A kubeconfig file's bytes to the settings of a connection, or the error (as ``load_secret``)."""
    try:
        return kubeconfig.load(content)
    except kubeconfig.KubeconfigError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - defensive, as load_secret
        log.warning("unexpected failure reading a MultiKueue kubeconfig", extra={"fields": {
            "error": type(exc).__name__}})
        return kubeconfig.KubeconfigError(f"failed to parse kubeconfig: unexpected {type(exc).__name__}")


def secret_name_problem(name: object) -> str | None:
    """Why ``location`` cannot name a Secret (None: it can): a Secret's name is a DNS-1123 subdomain,
    so anything else is refused before a request is made, never put into the Secret's API path
    (``../x``, ``%2e%2e``, ``a?b`` would name another path, another query). Upstream's
    clustersReconciler gets the Secret through controller-runtime, whose client-go request refuses
    such a name as a path segment; the message here says which field to fix."""
    if not isinstance(name, str):
        what = json.dumps(name) if name is None or isinstance(name, bool | int | float) else f"a {type(name).__name__}"
        return f"{what} is not a valid Secret name: it must be a string"
    problems = names.dns1123_subdomain(name)
    if not problems:
        return None
    shown = json.dumps(name if len(name) <= 80 else name[:77] + "...")
    return f"{shown} is not a valid Secret name: {'; '.join(problems)}"


def _condition(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def _stamp(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


class Workers:
    """The worker clusters of every MultiKueueCluster, their connections and conditions."""

    def __init__(self, kube: Kube, informers: dict[str, Informer], namespace: str, origin: str,
                 changed: Callable[[str], None], remote_event: Callable[[str, str, dict[str, Any]], None],
                 clock: Callable[[], float] = time.time) -> None:
        self.kube = kube
        self.informers = informers  # the manager's caches: multikueueclusters, multikueueconfigs, admissionchecks
        self.namespace = namespace
        self.origin = origin
        self.changed = changed  # called with a worker's name when its state changes
        self.remote_event = remote_event  # (worker, plural, object) for each change a worker's informers see
        self.clock = clock
        self.workers: dict[str, Worker] = {}
        self.written: dict[tuple[str, str], tuple[bool, str, str]] = {}  # (plural, name) -> condition

    def usable(self, name: str) -> Worker | None:
        """The worker, once connected and its caches listed: until then an empty cache would read as
        "no copy there" (a rotated Secret reconnects, and the job running there must not look gone)."""
        worker = self.workers.get(name)
        if worker is None or not worker.connected or worker.kube is None or not worker.informers:
            return None
        return worker if all(inf.synced.is_set() for inf in worker.informers.values()) else None

    async def run(self) -> None:
        """Forever: every MultiKueueCluster reconciled, then every MultiKueue AdmissionCheck."""
        try:
            while True:
                await self.sync_all()
                await asyncio.sleep(PROBE_SECONDS)
        finally:
            for worker in self.workers.values():
                await worker.close()

    async def sync_all(self) -> None:
        clusters = self.informers["multikueueclusters"].store
        for name in list(self.workers):
            if name not in clusters:
                await self.workers.pop(name).close()
                self.changed(name)
        for obj in list(clusters.values()):
            try:
                await self.reconcile(obj)
            except Exception as exc:  # noqa: BLE001 - one cluster's failure must not stop the others
                log.warning("multikueue cluster not reconciled", extra={"fields": {
                    "cluster": obj["metadata"]["name"], "error": type(exc).__name__, "message": str(exc)[:300]}})
        for check in list(self.informers["admissionchecks"].store.values()):
            if (check.get("spec") or {}).get("controllerName") == mk.CONTROLLER_NAME:
                await self.check_status(check)

    async def reconcile(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        worker = self.workers.setdefault(name, Worker(name, lost_since=self.clock()))
        was = worker.connected
        status, reason, message = await self._connect(worker, obj)
        worker.connected = status
        if status:
            worker.lost_since = None
        elif worker.lost_since is None:
            worker.lost_since = self.clock()
        if was != status:
            log.info("multikueue cluster " + ("connected" if status else "inactive"), extra={"fields": {
                "cluster": name, "reason": reason, "message": message}})
            self.changed(name)
        await self._write_condition(r.MULTIKUEUE_CLUSTER, obj, "Active", status, reason, message)

    async def _checked(self, worker: Worker, encoded: Any,
                       loader: Callable[[Any], kubeconfig.Settings | kubeconfig.KubeconfigError] | None = None,
                       ) -> kubeconfig.Settings | kubeconfig.KubeconfigError:
        """The settings of the Secret's kubeconfig (``data.kubeconfig``, base64; a file's bytes with
        ``loader`` ``load_file``), or the error: read and checked in a thread, once per content (the
        probe every 2 s finds it in the worker's ``checked``)."""
        raw = encoded if isinstance(encoded, bytes) else encoded.encode() if isinstance(encoded, str) \
            else repr(encoded).encode()
        digest = hashlib.sha256(raw).digest()
        if worker.checked[0] != digest or worker.checked[1] is None:
            worker.checked = (digest, await asyncio.to_thread(loader or load_secret, encoded))
        assert worker.checked[1] is not None
        return worker.checked[1]

    async def _path_settings(self, worker: Worker, location: object) -> kubeconfig.Settings | kubeconfig.KubeconfigError:
        """``locationType: Path`` (upstream reads the file too): its bytes, read in a thread at each
        probe (a mounted Secret's file is replaced when the Secret rotates), checked once per content."""
        content = await asyncio.to_thread(read_path, location)
        if isinstance(content, kubeconfig.KubeconfigError):
            return content
        return await self._checked(worker, content, load_file)

    async def _connect(self, worker: Worker, obj: dict[str, Any]) -> tuple[bool, str, str]:
        source = ((obj.get("spec") or {}).get("clusterSource") or {})
        ref = source.get("kubeConfig")
        if not isinstance(ref, dict):
            return False, "BadKubeConfig", "load client config failed: kubeconfig reference is nil"
        location_type = ref.get("locationType", "Secret")
        if location_type not in ("Secret", "Path"):
            return False, "BadKubeConfig", f"load client config failed: unknown locationType {str(location_type)[:64]!r}"
        if location_type == "Path":
            settings = await self._path_settings(worker, ref.get("location"))
            if isinstance(settings, kubeconfig.KubeconfigError):
                await worker.close()
                return False, settings.reason, f"load client config failed: {settings}"
            return await self._connected(worker, settings)
        secret_name = ref.get("location", "")
        bad_name = secret_name_problem(secret_name)
        if bad_name is not None:
            await worker.close()
            return False, "BadKubeConfig", f"load client config failed: {LOCATION}: {bad_name}"
        try:
            secret = await self.kube.get(r.SECRET, secret_name, self.namespace)
        except ApiError as exc:
            missing = f'secrets "{secret_name}" not found' if exc.status == 404 else str(exc)
            await worker.close()
            return False, "BadKubeConfig", f"load client config failed: {missing}"
        encoded = (secret.get("data") or {}).get(SECRET_KEY)
        if encoded is None:
            await worker.close()
            return False, "BadKubeConfig", (
                f'load client config failed: key "{SECRET_KEY}" not found in secret "{secret_name}"')
        settings = await self._checked(worker, encoded)
        if isinstance(settings, kubeconfig.KubeconfigError):
            await worker.close()
            return False, settings.reason, f"load client config failed: {settings}"
        return await self._connected(worker, settings)

    async def _connected(self, worker: Worker, settings: kubeconfig.Settings) -> tuple[bool, str, str]:
        """Connect with checked ``settings`` (anew when their content changed) and probe the worker."""
        if worker.source != worker.checked[0]:  # new, or the Secret was rotated: connect afresh
            await worker.close()
            try:
                worker.kube = kubeconfig.connect(settings)
            except kubeconfig.KubeconfigError as exc:
                return False, exc.reason, f"load client config failed: {exc}"
            worker.source = worker.checked[0]
        assert worker.kube is not None
        try:
            response = await worker.kube.raw("GET", "/version", timeout=PROBE_TIMEOUT)
            async with response:
                ok = response.status == 200
                detail = f"HTTP {response.status}"
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            ok, detail = False, str(exc) or type(exc).__name__
        if not ok:
            return False, "ClientConnectionFailed", detail
        if not worker.tasks:
            self._watch(worker)
        return True, "Active", "Connected"

    def _watch(self, worker: Worker) -> None:
        """The worker's Workloads and job objects carrying this manager's origin label, cached: each kind
        with a MultiKueue adapter whose objects the manager caches (its integrations that are on)."""
        assert worker.kube is not None
        selector = f"{mk.ORIGIN_LABEL}={self.origin}"
        for res in (r.WORKLOAD, *adapters.watched(self.informers)):
            inf = Informer(worker.kube, res, lambda t, o, n, res=res, w=worker.name: self.remote_event(
                w, res.plural, n or o), label_selector=selector)
            worker.informers[res.plural] = inf
            worker.tasks.append(asyncio.create_task(inf.run(), name=f"multikueue-{worker.name}-{res.plural}"))

    async def check_status(self, check: dict[str, Any]) -> None:
        """A MultiKueue AdmissionCheck's Active condition (upstream's ACReconciler)."""
        params = (check.get("spec") or {}).get("parameters")
        why = mk.bad_parameters(params)
        configs = self.informers["multikueueconfigs"].store
        if why is None and (config := configs.get(params["name"])) is None:
            why = f'multikueueconfigs.kueue.x-k8s.io "{params["name"]}" not found'
        if why is not None:
            cond = mk.Condition(False, mk.BAD_CONFIG, f"Cannot load the AdmissionChecks parameters: {why}")
        else:
            clusters = list((config.get("spec") or {}).get("clusters") or [])
            known = self.informers["multikueueclusters"].store
            missing = [c for c in clusters if c not in known]
            inactive = [c for c in clusters if c in known and not _is_true(known[c], "Active")]
            cond = mk.check_active(clusters, missing, inactive)
        await self._write_condition(r.ADMISSION_CHECK, check, "Active", cond.status, cond.reason, cond.message)

    async def _write_condition(self, res: r.Resource, obj: dict[str, Any], kind: str, status: bool, reason: str,
                               message: str) -> None:
        conditions = (obj.get("status") or {}).get("conditions") or []
        old = _condition(conditions, kind)
        state = (status, reason, message)
        name = obj["metadata"]["name"]
        if old is not None and (old.get("status") == ("True" if status else "False"), old.get("reason"),
                                old.get("message")) == ("True" if status else "False", reason, message):
            return
        if self.written.get((res.plural, name)) == state:
            return  # written, and the cache has not caught up yet
        now = self.clock()
        stamp = old.get("lastTransitionTime") if old is not None and old.get("status") == (
            "True" if status else "False") else _stamp(now)
        condition = {"type": kind, "status": "True" if status else "False", "reason": reason, "message": message,
                     "lastTransitionTime": stamp or _stamp(now),
                     "observedGeneration": obj["metadata"].get("generation", 0)}
        body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name},
                "status": {"conditions": [condition]}}
        try:
            await self.kube.apply(res, body, manager=MANAGER, subresource="status")
            self.written[(res.plural, name)] = state
        except ApiError as exc:
            log.warning("condition not written", extra={"fields": {"kind": res.kind, "name": name, "error": str(exc)}})


def _is_true(obj: dict[str, Any], kind: str) -> bool:
    cond = _condition((obj.get("status") or {}).get("conditions") or [], kind)
    return cond is not None and cond.get("status") == "True"
