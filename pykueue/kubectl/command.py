"""``pykueue get|describe|stop|resume|pending``: kueuectl's verbs against a kubeconfig.

Each verb is one top-level command (``pykueue get workloads``, as ``kubectl kueue list workload``), so
that each registers in the CLI with ``add_parser(sub)`` and ``run(args)``. Errors follow kubectl's
convention: one ``pykueue VERB: error: ...`` line on stderr, exit 1 for what the cluster said or could
not say, exit 2 (with the usage) for a command-line mistake; never a traceback.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pykueue.kube.resources import (
    CLUSTER_QUEUE,
    CORE_EVENT,
    LOCAL_QUEUE,
    WORKLOAD,
    InvalidPathSegment,
    Resource,
    segment,
)
from pykueue.kubectl import state
from pykueue.kubectl.errors import ApiStatus, CliError, api_error, explain

if TYPE_CHECKING:  # the API client and rich load when a verb runs, not with every pykueue command
    from pykueue.kubectl.client import Session

Obj = dict[str, Any]
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

# Resource types as kueuectl names them, with its aliases and the plurals kubectl accepts.
TYPES: dict[str, Resource] = {
    **dict.fromkeys(("workload", "workloads", "wl", "kueueworkload"), WORKLOAD),
    **dict.fromkeys(("clusterqueue", "clusterqueues", "cq"), CLUSTER_QUEUE),
    **dict.fromkeys(("localqueue", "localqueues", "lq", "queue", "queues"), LOCAL_QUEUE),
}
TYPE_HELP = "workloads (wl), clusterqueues (cq) or localqueues (lq)"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")
CLIENT_SIDE = "computed client-side from the Workloads (by priority, then creation time): the visibility API"
# An APIService that answers 503 has no backend: say what else that breaks, and how to end it.
STALE = ("registered but unavailable (503): nothing serves its APIService, which also makes discovery fail and "
         "namespace deletion hang; start the controller in the cluster, or remove it with kubectl delete "
         "apiservice v1beta2.visibility.kueue.x-k8s.io v1beta1.visibility.kueue.x-k8s.io")
WORKLOAD_STATUSES = ("all", "pending", "quotareserved", "admitted", "finished")


def _resource_type(text: str) -> Resource:
    try:
        return TYPES[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f'unknown resource type "{text}": use {TYPE_HELP}') from None


def _seconds(text: str) -> float:
    from pykueue.api.durations import parse_duration

    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return value


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def _connection_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", metavar="FILE",
                   help="the kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config; in a pod, its service account)")
    p.add_argument("--context", metavar="NAME", help="the kubeconfig context to use (default: its current context)")
    p.add_argument("-n", "--namespace", metavar="NS",
                   help="the namespace of workloads and local queues (default: the context's, else default)")
    p.add_argument("--request-timeout", type=_seconds, default=30.0, metavar="DURATION",
                   help="give up on a request to the API server after this long (default 30s)")


# ----------------------------------------------------------------------------------------- verbs


class Verb:
    """One top-level command: its parser and its run, with the error handling all verbs share."""

    def __init__(self, name: str, help: str, description: str,
                 configure: Callable[[argparse.ArgumentParser], None],
                 check: Callable[[argparse.Namespace], str | None],
                 action: Callable[[Session, argparse.Namespace], Awaitable[int]]) -> None:
        self.name = name
        self.help = help
        self.description = description
        self.configure = configure
        self.check = check
        self.action = action

    def add_parser(self, sub: Any) -> None:
        p = sub.add_parser(self.name, help=self.help, description=self.description)
        self.configure(p)
        p.set_defaults(kubectl_parser=p)
        _intermixed(p)

    def run(self, args: argparse.Namespace) -> int:
        problem = self.check(args)
        if problem is not None:
            parser = getattr(args, "kubectl_parser", None)
            if parser is not None:
                parser.print_usage(sys.stderr)
            print(f"pykueue {self.name}: error: {problem}", file=sys.stderr)
            return EXIT_USAGE
        import asyncio  # here, not at the top: every `pykueue` command imports this module for its options

        try:
            return asyncio.run(self._main(args))
        except (CliError, InvalidPathSegment) as exc:  # a name that cannot be in a path: kubectl's error too
            sys.stdout.flush()
            print(f"pykueue {self.name}: error: {exc}", file=sys.stderr)
            return EXIT_ERROR

    async def _main(self, args: argparse.Namespace) -> int:
        from pykueue.kubectl.client import open_session

        session = await open_session(args.kubeconfig, args.context, args.request_timeout)
        try:
            return await self.action(session, args)
        finally:
            await session.close()


def _intermixed(parser: argparse.ArgumentParser) -> None:
    """Let NAMEs follow options (``get wl -n team NAME``), as kubectl does: argparse gives an optional
    positional (``NAME ...``) its empty match at the first option and then calls later NAMEs
    unrecognized, unless the parser parses intermixed. The top-level parser reaches this one through
    ``parse_known_args``, which is pointed at the intermixed parse (whose own inner call gets the plain one)."""
    plain = parser.parse_known_args
    inside = False

    def parse(args: Any = None, namespace: Any = None) -> Any:
        nonlocal inside
        if inside:
            return plain(args, namespace)
        inside = True
        try:
            return parser.parse_known_intermixed_args(args, namespace)
        finally:
            inside = False

    parser.parse_known_args = parse  # type: ignore[method-assign]


def _namespace(session: Session, args: argparse.Namespace) -> str:
    return getattr(args, "namespace", None) or session.namespace


def _out() -> Any:
    from pykueue.sim.table import terminal

    return terminal()


def _clean(obj: Obj) -> Obj:
    """As kubectl prints objects by default: without ``metadata.managedFields``."""
    obj = copy.deepcopy(obj)
    (obj.get("metadata") or {}).pop("managedFields", None)
    return obj


def _print_document(doc: Any, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(doc, indent=4) + "\n")
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))


def _qualified(res: Resource) -> str:
    """``workload.kueue.x-k8s.io``: how kubectl's name printer names a kind."""
    return f"{res.kind.lower()}.{res.group}" if res.group else res.kind.lower()


def _styles(row: Sequence[str], columns: Sequence[int]) -> dict[int, str]:
    from pykueue.kubectl import tables

    return {i: tables.STYLE[row[i]] for i in columns if row[i] in tables.STYLE}


# --------------------------------------------------------------------------------- pending order


async def _visibility(session: Session, path: str, query: dict[str, Any] | None = None
                      ) -> tuple[list[Obj] | None, str]:
    """The items of a visibility API answer at ``path`` (under the group and version); or None and
    why the API cannot answer: the cluster does not serve it (404 without a Status), its APIService is
    unavailable (503), or this user may not use it (403; RBAC answers before the router, so a user
    without rights gets that even where the API does not exist). A Status 404 is the API saying the
    queue does not exist: the caller's ``CliError``."""
    why = "not served by this cluster"
    for version in VISIBILITY_VERSIONS:
        try:
            answer = await session.request("GET", f"/apis/{VISIBILITY_GROUP}/{version}{path}", query=query)
        except ApiStatus as exc:
            if exc.status == 404 and not exc.is_status:
                continue
            if exc.status in (403, 503):
                why = {403: "not allowed for this user", 503: STALE}[exc.status]
                continue
            if exc.status == 404:
                raise CliError(" ".join(exc.message.split())) from None
            raise api_error(exc) from None
        return list(answer.get("items") or []), ""
    return None, why


def _by_key(objs: Sequence[Obj]) -> dict[tuple[str, str], Obj]:
    return {state.key(o): o for o in objs}


async def _positions(session: Session, workloads: Sequence[Obj], local_queues: dict[tuple[str, str], Obj]
                     ) -> dict[tuple[str, str], int]:
    """Each queued workload's position in its LocalQueue, as ``kueuectl list workload`` shows it: from
    the visibility API of each ClusterQueue involved, else computed from ``workloads`` (which must hold
    every workload of the namespaces concerned: positions in a LocalQueue only depend on those)."""
    queues = sorted({cq for wl in workloads if state.is_queued(wl)
                     for cq in [state.cluster_queue_of(wl, local_queues)] if cq})
    found: dict[tuple[str, str], int] = {}
    for cq in queues:
        try:
            items, _ = await _visibility(session, f"/clusterqueues/{segment(cq)}/pendingworkloads")
        except (CliError, InvalidPathSegment):  # a queue the API does not know: no positions in it, as upstream
            continue
        if items is None:
            break
        for item in items:
            meta = item.get("metadata") or {}
            found[(meta.get("namespace", ""), meta.get("name", ""))] = int(item.get("positionInLocalQueue", 0))
    else:
        return found
    items = state.pending_workloads(workloads, local_queues)
    return {state.key(i): int(i["positionInLocalQueue"]) for i in items}


# -------------------------------------------------------------------------------------------- get


def _get_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("type", type=_resource_type, metavar="TYPE", help=f"what to list: {TYPE_HELP}")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these (default: all)")
    _connection_options(p)
    p.add_argument("-A", "--all-namespaces", action="store_true",
                   help="list workloads or local queues of every namespace, with a NAMESPACE column")
    p.add_argument("-o", "--output", choices=("wide", "json", "yaml", "name"),
                   help="wide: more columns; json or yaml: the objects (a List); name: TYPE/NAME lines")
    p.add_argument("-l", "--selector", metavar="SELECTOR", help="a label selector (key=value,key!=value,...)")
    p.add_argument("--status", action="append", metavar="STATUS", type=str.lower,
                   help="workloads with this status only (repeatable): " + ", ".join(WORKLOAD_STATUSES))
    p.add_argument("--localqueue", metavar="NAME", help="workloads submitted to this LocalQueue only")
    p.add_argument("--clusterqueue", metavar="NAME",
                   help="workloads of this ClusterQueue only (the one that reserved their quota, else their "
                        "LocalQueue's)")


def _get_check(args: argparse.Namespace) -> str | None:
    if args.all_namespaces and args.names:
        return "a resource cannot be retrieved by name across all namespaces"
    if args.type is not WORKLOAD:
        for flag, value in (("--status", args.status), ("--localqueue", args.localqueue),
                            ("--clusterqueue", args.clusterqueue)):
            if value:
                return f"{flag} filters workloads; it does not apply to {args.type.plural}"
    for status in args.status or ():
        if status not in WORKLOAD_STATUSES:
            return f'--status: invalid status "{status}": must be one of {", ".join(WORKLOAD_STATUSES)}'
    return None


def _status_filter(args: argparse.Namespace) -> set[str] | None:
    statuses = set(args.status or ())
    if not statuses or "all" in statuses:
        return None
    words = {"pending": state.PENDING, "quotareserved": state.QUOTA_RESERVED, "admitted": state.ADMITTED,
             "finished": state.FINISHED}
    return {words[s] for s in statuses}


async def _get(session: Session, args: argparse.Namespace) -> int:
    from pykueue.kubectl import tables

    res: Resource = args.type
    namespace = None if (args.all_namespaces or not res.namespaced) else _namespace(session, args)
    items = await session.list(res, namespace, labelSelector=args.selector)
    missing: list[str] = []
    if args.names:
        by_name = {(i.get("metadata") or {}).get("name"): i for i in items}
        missing = [n for n in args.names if n not in by_name]
        items = [by_name[n] for n in dict.fromkeys(args.names) if n in by_name]
    rows: list[list[str]] = []
    styled: tuple[int, ...] = ()
    if res is WORKLOAD:
        local_queues = _by_key(await session.list(LOCAL_QUEUE, namespace))
        everything = items if not (args.selector or args.names) else await session.list(WORKLOAD, namespace)
        positions = await _positions(session, everything, local_queues) if args.output in (None, "wide") else {}
        wanted = _status_filter(args)
        kept = []
        for wl in items:
            cq = state.cluster_queue_of(wl, local_queues)
            if wanted is not None and state.workload_status(wl) not in wanted:
                continue
            if args.localqueue and (wl.get("spec") or {}).get("queueName") != args.localqueue:
                continue
            if args.clusterqueue and cq != args.clusterqueue:
                continue
            kept.append(wl)
            rows.append(tables.workload_row(wl, cq, positions.get(state.key(wl)), tables.now(), args.output == "wide"))
        items = kept
        columns = tables.WORKLOAD_COLUMNS + (tables.WORKLOAD_WIDE if args.output == "wide" else ())
        styled = (5,)
    elif res is CLUSTER_QUEUE:
        rows = [tables.cluster_queue_row(cq, tables.now(), args.output == "wide") for cq in items]
        columns = tables.CLUSTER_QUEUE_COLUMNS + (tables.CLUSTER_QUEUE_WIDE if args.output == "wide" else ())
        styled = (4,)
    else:
        rows = [tables.local_queue_row(lq, tables.now(), args.output == "wide") for lq in items]
        columns = tables.LOCAL_QUEUE_COLUMNS + (tables.LOCAL_QUEUE_WIDE if args.output == "wide" else ())
        styled = (5,) if args.output == "wide" else ()
    if args.output in ("json", "yaml"):
        if len(args.names) == 1 and len(items) == 1:
            _print_document(_clean(items[0]), args.output)
        elif items or not missing:
            _print_document({"apiVersion": "v1", "kind": "List", "items": [_clean(i) for i in items],
                             "metadata": {"resourceVersion": ""}}, args.output)
    elif args.output == "name":
        for item in items:
            print(f"{_qualified(res)}/{(item.get('metadata') or {}).get('name', '')}")
    elif rows:
        if args.all_namespaces and res.namespaced:
            columns = (tables.NAMESPACE, *columns)
            rows = [[state.key(i)[0], *r] for i, r in zip(items, rows, strict=True)]
            styled = tuple(i + 1 for i in styled)
        tables.table(_out(), columns, rows, styles=[_styles(r, styled) for r in rows])
    elif not missing:
        where = f" in {namespace} namespace" if namespace is not None else ""
        print(f"No resources found{where}.", file=sys.stderr)
    if missing:
        sys.stdout.flush()
        for name in missing[:-1]:
            print(f"pykueue get: error: {explain(_not_found(), res, name, namespace)}", file=sys.stderr)
        raise explain(_not_found(), res, missing[-1], namespace)
    return EXIT_OK


def _not_found() -> ApiStatus:
    return ApiStatus(404, {"kind": "Status", "reason": "NotFound"}, "", "GET", "")


# --------------------------------------------------------------------------------------- describe


def _describe_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("type", type=_resource_type, metavar="TYPE", help=f"what to describe: {TYPE_HELP}")
    p.add_argument("names", nargs="+", metavar="NAME", help="the object(s) to describe")
    _connection_options(p)


async def _events(session: Session, obj: Obj, res: Resource) -> tuple[list[Obj] | None, str | None]:
    """The core/v1 Events about ``obj`` (kubectl describe's query), or why they cannot be read."""
    from pykueue.kubectl.describe import sort_events

    meta = obj.get("metadata") or {}
    selector = f"involvedObject.kind={res.kind},involvedObject.name={meta.get('name')}"
    if meta.get("uid"):
        selector += f",involvedObject.uid={meta['uid']}"
    try:
        events = await session.list(CORE_EVENT, meta.get("namespace") if res.namespaced else None,
                                    fieldSelector=selector)
    except CliError as exc:
        return None, str(exc)
    return sort_events(events), None


async def _describe(session: Session, args: argparse.Namespace) -> int:
    from pykueue.kubectl import describe as pages
    from pykueue.kubectl import tables

    res: Resource = args.type
    namespace = _namespace(session, args) if res.namespaced else None
    console = _out()
    page = pages.Page(console, tables.now())
    for n, name in enumerate(dict.fromkeys(args.names)):
        obj = await session.get(res, name, namespace)
        events, events_error = await _events(session, obj, res)
        if n:
            console.print()
        if res is WORKLOAD:  # its ClusterQueue and position are extras: a user who may only get it still sees it
            local_queues: dict[tuple[str, str], Obj] = {}
            position = None
            try:
                local_queues = _by_key(await session.list(LOCAL_QUEUE, namespace))
                if state.is_queued(obj):
                    positions = await _positions(session, await session.list(WORKLOAD, namespace), local_queues)
                    position = positions.get(state.key(obj))
            except CliError:
                pass
            pages.workload(page, obj, state.cluster_queue_of(obj, local_queues), position, events, events_error)
        elif res is CLUSTER_QUEUE:
            try:
                queues = sorted(f"{ns}/{lq_name}" for (ns, lq_name), lq in _by_key(await session.list(LOCAL_QUEUE)).items()
                                if (lq.get("spec") or {}).get("clusterQueue") == name)
            except CliError as exc:
                queues = [f"<unavailable: {exc}>"]
            pages.cluster_queue(page, obj, queues, events, events_error)
        else:
            pages.local_queue(page, obj, events, events_error)
    return EXIT_OK


# ---------------------------------------------------------------------------------- stop / resume


def _stop_parser(p: argparse.ArgumentParser, *, stop: bool) -> None:
    p.add_argument("type", type=_resource_type, metavar="TYPE",
                   help=f"what to {'stop' if stop else 'resume'}: {TYPE_HELP}")
    p.add_argument("name", metavar="NAME", help=f"the object to {'stop' if stop else 'resume'}")
    _connection_options(p)
    if stop:
        p.add_argument("--keep-already-running", action="store_true",
                       help="queues: hold new admissions but keep the admitted workloads running "
                            "(stopPolicy Hold; without it HoldAndDrain also evicts them)")
    p.add_argument("--dry-run", choices=("none", "server", "client"), default="none",
                   help="server: have the API server check the change without keeping it; client: only print it")
    p.add_argument("-o", "--output", choices=("name", "json", "yaml"), default="name",
                   help="name (default): TYPE/NAME and what was done; json or yaml: the changed object")


def _stop_check(args: argparse.Namespace) -> str | None:
    if getattr(args, "keep_already_running", False) and args.type is WORKLOAD:
        return "--keep-already-running applies to clusterqueues and localqueues (a workload is simply deactivated)"
    return None


def _merge(obj: Obj, patch: Obj) -> Obj:
    """RFC 7386 merge patch, for --dry-run=client."""
    out = copy.deepcopy(obj)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _toggle(stop: bool) -> Callable[[Session, argparse.Namespace], Awaitable[int]]:
    async def act(session: Session, args: argparse.Namespace) -> int:
        res: Resource = args.type
        namespace = _namespace(session, args) if res.namespaced else None
        obj = await session.get(res, args.name, namespace)
        if res is WORKLOAD:  # kueuectl: .spec.active, which Kueue treats as a preemption when admitted
            patch = {"spec": {"active": not stop}}
        elif stop:
            patch = {"spec": {"stopPolicy": "Hold" if args.keep_already_running else "HoldAndDrain"}}
        else:
            patch = {"spec": {"stopPolicy": "None"}}
        if args.dry_run == "client":
            changed = _merge(obj, patch)
        else:
            changed = await session.merge_patch(res, args.name, patch, namespace, dry_run=args.dry_run == "server")
        if args.output == "name":
            suffix = {"none": "", "server": " (server dry run)", "client": " (dry run)"}[args.dry_run]
            print(f"{_qualified(res)}/{args.name} {'stopped' if stop else 'resumed'}{suffix}")
        else:
            _print_document(_clean(changed), args.output)
        return EXIT_OK

    return act


# ------------------------------------------------------------------------------------------ pending


def _pending_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("type", type=_resource_type, metavar="TYPE",
                   help="clusterqueue (cq) or localqueue (lq): whose pending workloads to list")
    p.add_argument("name", metavar="NAME", help="the queue")
    _connection_options(p)
    p.add_argument("-o", "--output", choices=("json", "yaml"),
                   help="a PendingWorkloadsSummary document, as the visibility API answers (default: a table)")
    p.add_argument("--limit", type=_count, default=1000, metavar="N", help="list at most N workloads (default 1000)")
    p.add_argument("--offset", type=_count, default=0, metavar="N",
                   help="start at this position (0: the head of the queue)")


def _pending_check(args: argparse.Namespace) -> str | None:
    if args.type is WORKLOAD:
        return "pending lists the workloads of a clusterqueue or a localqueue, not of a workload"
    return None


async def _all_or_namespace(session: Session, res: Resource, namespace: str) -> tuple[list[Obj], bool]:
    """Every ``res`` of the cluster, or only the namespace's when the user may not list the cluster's
    (a batch user): the flag says whether the list is the whole cluster's."""
    try:
        return await session.list(res), True
    except CliError as exc:
        if not str(exc).startswith("Forbidden"):
            raise
    return await session.list(res, namespace), False


async def _pending(session: Session, args: argparse.Namespace) -> int:
    from rich.text import Text

    from pykueue.kubectl import tables
    from pykueue.sim.table import wrap

    res: Resource = args.type
    namespace = _namespace(session, args)
    query = {"limit": args.limit, "offset": args.offset}
    if res is CLUSTER_QUEUE:
        what = f"ClusterQueue {args.name}"
        items, why = await _visibility(session, f"/clusterqueues/{segment(args.name)}/pendingworkloads", query)
    else:
        what = f"LocalQueue {namespace}/{args.name}"
        path = f"/namespaces/{segment(namespace, 'namespace')}/localqueues/{segment(args.name)}/pendingworkloads"
        items, why = await _visibility(session, path, query)
    note = None
    if items is None:
        note = f"{CLIENT_SIDE} {VISIBILITY_GROUP} is {why}"
        queue = await session.get(res, args.name, None if res is CLUSTER_QUEUE else namespace)
        if res is CLUSTER_QUEUE:
            workloads, local_queues = await session.list(WORKLOAD), await session.list(LOCAL_QUEUE)
            computed = state.pending_workloads(workloads, _by_key(local_queues), args.name)
        else:
            cq = str((queue.get("spec") or {}).get("clusterQueue") or "")
            workloads, whole = await _all_or_namespace(session, WORKLOAD, namespace)
            local_queues, whole_lqs = await _all_or_namespace(session, LOCAL_QUEUE, namespace)
            computed = [i for i in state.pending_workloads(workloads, _by_key(local_queues), cq)
                        if (i["metadata"].get("namespace"), i["localQueueName"]) == (namespace, args.name)]
            if not (whole and whole_lqs):  # other namespaces' workloads are not visible: no ClusterQueue positions
                note += "; positions in the ClusterQueue unknown (other namespaces cannot be listed)"
                for i in computed:
                    i["positionInClusterQueue"] = None
        by = "positionInClusterQueue" if res is CLUSTER_QUEUE else "positionInLocalQueue"
        items = [i for i in computed if i[by] >= args.offset][: args.limit]
    if args.output:
        if note:
            print(f"Note: {note}.", file=sys.stderr)
        _print_document(state.summary(items), args.output)
        return EXIT_OK
    console = _out()
    tables.line(console, Text(f"Pending workloads of {what}", style="bold"))
    source = note or f"from the visibility API {VISIBILITY_GROUP}"
    for text in wrap(source[:1].upper() + source[1:] + ".", console.width):
        tables.line(console, Text(text, style="dim"))
    if not items:
        tables.line(console, "No pending workloads.")
        return EXIT_OK
    local = res is LOCAL_QUEUE
    rows = [tables.pending_row(i, local, tables.now()) for i in items]
    tables.table(console, tables.pending_columns(local), rows)
    return EXIT_OK


# ----------------------------------------------------------------------------------------- registry


get = Verb(
    "get", "list workloads, cluster queues or local queues in kueuectl's columns",
    "List Kueue objects as `kubectl kueue list` does: workloads with their job, queues, status, position in "
    "queue and execution time; cluster queues with cohort, pending and admitted workloads and whether active; "
    "local queues with their cluster queue and counts.",
    _get_parser, _get_check, _get,
)
describe = Verb(
    "describe", "show one workload, cluster queue or local queue in detail, with its events",
    "Describe Kueue objects as `kubectl describe` does, with what they mean: a workload's status, admission "
    "and flavors, conditions with reasons and messages, admission checks and requeue state; a cluster queue's "
    "quota and usage per flavor and resource; and the events recorded for the object.",
    _describe_parser, lambda args: None, _describe,
)
stop = Verb(
    "stop", "stop a workload (spec.active=false) or hold a cluster queue or local queue",
    "As `kubectl kueue stop`: a workload is deactivated (spec.active: false; evicted if admitted); a cluster "
    "queue or local queue gets spec.stopPolicy HoldAndDrain (evict what runs), or Hold with "
    "--keep-already-running.",
    lambda p: _stop_parser(p, stop=True), _stop_check, _toggle(stop=True),
)
resume = Verb(
    "resume", "resume a stopped workload (spec.active=true) or queue (spec.stopPolicy=None)",
    "As `kubectl kueue resume`: a workload is reactivated (spec.active: true); a cluster queue or local queue "
    "gets spec.stopPolicy None.",
    lambda p: _stop_parser(p, stop=False), _stop_check, _toggle(stop=False),
)
pending = Verb(
    "pending", "the pending workloads of a cluster queue or local queue, in admission order",
    "List the workloads waiting in a cluster queue or local queue with their positions and priorities, from "
    f"Kueue's visibility API ({VISIBILITY_GROUP}) when the cluster serves it, else computed by pykueue from "
    "the Workloads (queued ones by priority, highest first, then creation time; positions from 0).",
    _pending_parser, _pending_check, _pending,
)
