"""The engine's answers against the live state: ``explain`` for a workload, and the what-if box.

The watched objects become engine objects through the controller's own translation
(``controller.core.translate``: the API layer's validation, defaulting and conversion, recorded admissions
kept), then one instant of ``simulate`` plays them, so a workload's answer is what ``pykueue explain``
says of the same objects: its place in its queue, the quota it asks for against what its ClusterQueue
has, and what would have to change. A pasted Job joins them as ``explain --what-if`` adds a file.

The live state has no runtimes, so "when" is "now" or "once what is listed changes": nothing here
guesses how long running workloads take.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pykueue.api.documents import parse_text
from pykueue.api.inputs import Inputs, Source, SubmittedWorkload
from pykueue.api.loader import load_documents
from pykueue.controller.core import translate
from pykueue.dashboard.view import Objects
from pykueue.engine import events as ev
from pykueue.engine import model
from pykueue.engine.events import EngineError
from pykueue.kubectl import state as ks
from pykueue.sim.explain import explain
from pykueue.sim.simulator import Simulation

# The queue kinds in the order the simulator applies them; each goes to its list of Inputs.
QUEUE_KINDS = (
    ("namespaces", "namespaces"),
    ("resourceflavors", "resource_flavors"),
    ("admissionchecks", "admission_checks"),
    ("cohorts", "cohorts"),
    ("clusterqueues", "cluster_queues"),
    ("localqueues", "local_queues"),
)
# Every kind the answers read (a worker process is sent these, not the events, Jobs and the rest).
READ = (*(plural for plural, _ in QUEUE_KINDS), "priorityclasses", "workloadpriorityclasses", "workloads")


class WhatIfError(ValueError):
    """The pasted text is not one Job or Workload the API layer accepts: the message says why."""


class Answers:
    """Builds the engine's view of the live objects on request. Converted Workloads are kept by shape
    across requests, as the controller keeps them, so thousands of copies of a template cost one."""

    def __init__(self, config: model.Config | None = None) -> None:
        self.config = config or model.Config()
        self._cache: dict[bytes, model.Workload] = {}

    def inputs(self, objs: Objects) -> tuple[Inputs, list[str]]:
        """The live objects as the simulator's inputs: queue objects, then the unfinished Workloads in
        creation order (each keeps its creation time, which orders queues as Kueue orders them)."""
        inputs = Inputs(config=self.config)
        problems: list[str] = []
        for plural, attr in QUEUE_KINDS:
            target = getattr(inputs, attr)
            for key in sorted(objs.get(plural, {})):
                converted, found = translate.queue_object(objs[plural][key])
                if converted is None:
                    problems += [f"{plural}/{key}: {p}" for p in found]
                else:
                    target.append(converted)
        classes = [*objs.get("priorityclasses", {}).values(), *objs.get("workloadpriorityclasses", {}).values()]
        workloads = sorted(objs.get("workloads", {}).values(),
                           key=lambda w: (str((w.get("metadata") or {}).get("creationTimestamp", "")), ks.key(w)))
        for number, wl in enumerate(workloads, start=1):
            if ks.is_true(wl, "Finished"):
                continue
            converted, found = translate.workload(wl, classes, self._cache)
            if converted is None:
                problems += [f"workloads/{'/'.join(ks.key(wl))}: {p}" for p in found]
            else:
                inputs.workloads.append(SubmittedWorkload(converted, Source("live", number)))
        return inputs, problems

    def explain(self, objs: Objects, key: str) -> dict[str, Any] | None:
        """``pykueue explain``'s document for workload ``key`` (NAMESPACE/NAME) now, None when the engine
        does not know it (finished, or refused by validation)."""
        inputs, _ = self.inputs(objs)
        if not any(sub.workload.key == key for sub in inputs.workloads):
            return None
        try:
            run = Simulation(inputs, until=0.0).run()
        except EngineError as exc:
            return {"workload": key, "error": f"the engine stopped: {exc}"}
        return explain(run, key)

    def what_if(self, objs: Objects, text: str, now: float) -> dict[str, Any]:
        """Where the pasted Job (or Workload) would go if it were submitted at ``now`` (Unix seconds)."""
        read = parse_text(text, "what-if")  # the checks files get, held to a paste's size
        bad = next((raw for raw in read if raw.error is not None), None)
        if bad is not None:
            raise WhatIfError(f"document {bad.source.doc}: {bad.error}" if len(read) > 1 else str(bad.error))
        docs = [raw.content for raw in read if raw.content is not None]
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise WhatIfError("paste exactly one Job or Workload")
        doc = docs[0]
        if doc.get("kind") not in ("Job", "Workload"):
            raise WhatIfError(f"kind {doc.get('kind')!r}: paste a batch/v1 Job or a Workload")
        doc.setdefault("metadata", {}).setdefault("namespace", "default")
        if not doc["metadata"].get("name"):
            doc["metadata"]["name"] = "what-if"  # generateName alone: any name will do for a question
        classes = [*objs.get("priorityclasses", {}).values(), *objs.get("workloadpriorityclasses", {}).values()]
        added, problems = load_documents([*(translate.clean(c) for c in classes), translate.clean(doc)], "what-if")
        if problems:
            raise WhatIfError("; ".join(p.body for p in problems))
        if not added.workloads:
            raise WhatIfError("it is not queued by Kueue: give it the kueue.x-k8s.io/queue-name label")
        sub = added.workloads[-1]
        inputs, _ = self.inputs(objs)
        if any(s.workload.key == sub.workload.key for s in inputs.workloads):
            raise WhatIfError(f"{sub.workload.key} already exists: give the pasted object another name")
        inputs.workloads.append(dataclasses.replace(
            sub, workload=dataclasses.replace(sub.workload, creation_time=now), arrival=0.0,
            source=Source("what-if", 1)))
        try:
            run = Simulation(inputs, until=0.0).run()
        except EngineError as exc:
            raise WhatIfError(f"the engine stopped: {exc}") from None
        doc = explain(run, sub.workload.key)
        doc["preempts"] = sorted({logged.event.workload for logged in run.log
                                  if logged.event.type == ev.PREEMPTED and logged.event.by == sub.workload.key})
        return doc


_ANSWERS: list[Answers] = []  # the worker process's one Answers: its cache of converted shapes lasts


def ready() -> None:
    """Nothing: sent to a new worker process so that it imports this module before the first answer."""


def answer(config: model.Config, question: str, objs: Objects, *args: Any) -> dict[str, Any] | None:
    """``Answers.explain`` or ``Answers.what_if`` (``question``) in the worker process that runs them."""
    if not _ANSWERS or _ANSWERS[0].config != config:
        _ANSWERS[:] = [Answers(config)]
    if question == "explain":
        return _ANSWERS[0].explain(objs, *args)
    return _ANSWERS[0].what_if(objs, *args)
