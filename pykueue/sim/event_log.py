"""The simulation's timed event log, stored by column.

The engine hands over the events of one instant at a time, all at the same time, so the log keeps the
instants as (first index, time) marks, and the events' fields in columns: type, workload,
ClusterQueue, admission, and the rarely set rest (reason, by, message, cause) as one tuple or None. The strings are the engine's own (a workload's key, a queue's
name), so an event costs a few pointers instead of an object: events were the largest part of a
million-workload run's memory. Reading the log gives ``LoggedEvent``s (made as they are read), or
``(time_us, event)`` pairs for the writers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, repeat

from pykueue.engine.events import Event
from pykueue.engine.model import Admission


@dataclass(slots=True)
class LoggedEvent:
    time_us: int
    event: Event


class EventLog:
    """A sequence of ``LoggedEvent`` in the order they happened (times never decrease)."""

    __slots__ = ("_marks", "_types", "_workloads", "_queues", "_admissions", "_rest")

    def __init__(self) -> None:
        self._marks: list[tuple[int, int]] = []  # (index of the instant's first event, time_us)
        self._types: list[str] = []
        self._workloads: list[str] = []
        self._queues: list[str | None] = []
        self._admissions: list[Admission | None] = []
        self._rest: list[tuple[str | None, str | None, str | None, str | None] | None] = []

    def record(self, time_us: int, events: list[Event]) -> None:
        """Append the events of one instant (``time_us``, not earlier than the last one recorded)."""
        if not events:
            return
        marks, types = self._marks, self._types
        if not marks or marks[-1][1] != time_us:
            marks.append((len(types), time_us))
        workloads, queues, admissions, rest = self._workloads, self._queues, self._admissions, self._rest
        for e in events:
            types.append(e.type)
            workloads.append(e.workload)
            queues.append(e.cluster_queue)
            admissions.append(e.admission)
            if e.reason is None and e.by is None and e.message is None and e.underlying_cause is None:
                rest.append(None)
            else:
                rest.append((e.reason, e.by, e.message, e.underlying_cause))

    def append(self, logged: LoggedEvent) -> None:
        self.record(logged.time_us, [logged.event])

    def __len__(self) -> int:
        return len(self._types)

    def __bool__(self) -> bool:
        return bool(self._types)

    def _event(self, i: int) -> Event:
        rest = self._rest[i]
        admission = self._admissions[i]
        if rest is None:
            return Event(self._types[i], self._workloads[i], self._queues[i], None, None, None, admission, None)
        reason, by, message, cause = rest
        return Event(self._types[i], self._workloads[i], self._queues[i], reason, by, message, admission, cause)

    def pairs(self) -> Iterator[tuple[int, Event]]:
        """``(time_us, event)`` in order, each event made as it is read."""
        marks, count = self._marks, len(self._types)
        event = self._event
        for m, (start, time_us) in enumerate(marks):
            end = marks[m + 1][0] if m + 1 < len(marks) else count
            for i in range(start, end):
                yield time_us, event(i)

    def rows(self) -> Iterator[tuple[int, str, str, str | None, Admission | None,
                                     tuple[str | None, str | None, str | None, str | None] | None]]:
        """``(time_us, type, workload, ClusterQueue, admission, rest)`` in order, rest being
        ``(reason, by, message, underlying cause)`` or None when all four are: the columns zipped, without an
        ``Event`` made per row (the result writers read a million-workload log this way)."""
        marks, count = self._marks, len(self._types)
        if not marks:
            return iter(())
        ends = [start for start, _ in marks[1:]] + [count]
        times = chain.from_iterable([repeat(time_us, end - start) for (start, time_us), end in zip(marks, ends, strict=True)])
        return zip(times, self._types, self._workloads, self._queues, self._admissions, self._rest, strict=True)

    def __iter__(self) -> Iterator[LoggedEvent]:
        for time_us, event in self.pairs():
            yield LoggedEvent(time_us, event)

    def last_time_us(self) -> int | None:
        """The time of the last event, None for an empty log."""
        return self._marks[-1][1] if self._marks else None
