"""An elastic Job scaled while the clock runs (``pykueue.dev/at`` on a Job annotated
``kueue.x-k8s.io/elastic-job: "true"``): its workload slices, as the controller's job side makes them
(``pykueue.jobs.slicing``) and the engine admits them (``pykueue.engine.slices``).

A change of size follows upstream's EnsureWorkloadSlices against the Job's latest live slice: a slice
not holding quota, or a scale-down, is updated in place (a scale-down gives the difference back at
once); a scale-up of a slice holding quota adds a new slice, ``NAME#2``, ``NAME#3`` and so on (``#`` is
in no Kubernetes name, so it names no other object), that replaces it once admitted.
"""

from __future__ import annotations

from dataclasses import replace

from pykueue.engine import model
from pykueue.engine.engine import Engine
from pykueue.engine.slices import counts, scaled_down
from pykueue.engine.workload import State

_HOLDING = (State.QUOTA_RESERVED, State.ADMITTED)


def current(slices: dict[str, list[str]], first: str) -> str:
    """The key of the Job's latest slice (its first workload's, until it has scaled up)."""
    chain = slices.get(first)
    return chain[-1] if chain else first


def is_replacement(engine: Engine, key: str) -> bool:
    status = engine.workload_status(key)
    return status is not None and status.spec.replaces is not None


def scale(engine: Engine, slices: dict[str, list[str]], first: str, wanted: model.Workload, now: int) -> str | None:
    """The Job whose first workload is ``first`` now asks for ``wanted``'s pod sets; the key of a new
    slice when one is made."""
    chain = slices.setdefault(first, [first])
    live = [k for k in chain if engine.state_of(k) not in (None, State.FINISHED)]
    if not live:
        return None
    latest = engine.workload_status(live[-1])
    assert latest is not None
    have, want = counts(latest.spec.pod_sets), counts(wanted.pod_sets)
    if have == want or [n for n, _ in have] != [n for n, _ in want]:
        return None
    if latest.state not in _HOLDING or scaled_down(have, want):
        engine.update_workload(replace(latest.spec, pod_sets=wanted.pod_sets), now)
        return None
    name = f"{engine.workload_status(first).spec.name}#{len(chain) + 1}"  # type: ignore[union-attr]
    new = replace(wanted, name=name, replaces=latest.key, creation_time=now / model.US, admission=None)
    engine.add_workload(new, now)
    chain.append(new.key)
    return new.key
