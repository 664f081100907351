"""The simulation's timed event log, stored per instant.

The engine hands over the events of one instant at a time, all at the same time, so the log keeps the
engine's events in one list and the instants as (first index, time) marks beside it: a wrapper object
per event with its time was a sixth of a million-workload run's memory. Reading the log still gives
``LoggedEvent``s (made as they are read), or ``(time_us, event)`` pairs for the writers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pykueue.engine.events import Event


@dataclass(slots=True)
class LoggedEvent:
    time_us: int
    event: Event


class EventLog:
    """A sequence of ``LoggedEvent`` in the order they happened (times never decrease)."""

    __slots__ = ("_events", "_marks")

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._marks: list[tuple[int, int]] = []  # (index of the instant's first event, time_us)

    def record(self, time_us: int, events: list[Event]) -> None:
        """Append the events of one instant (``time_us``, not earlier than the last one recorded)."""
        if not events:
            return
        marks = self._marks
        if not marks or marks[-1][1] != time_us:
            marks.append((len(self._events), time_us))
        self._events.extend(events)

    def append(self, logged: LoggedEvent) -> None:
        self.record(logged.time_us, [logged.event])

    def __len__(self) -> int:
        return len(self._events)

    def __bool__(self) -> bool:
        return bool(self._events)

    def pairs(self) -> Iterator[tuple[int, Event]]:
        """``(time_us, event)`` in order, without a wrapper per event."""
        events, marks = self._events, self._marks
        for i, (start, time_us) in enumerate(marks):
            end = marks[i + 1][0] if i + 1 < len(marks) else len(events)
            for j in range(start, end):
                yield time_us, events[j]

    def __iter__(self) -> Iterator[LoggedEvent]:
        for time_us, event in self.pairs():
            yield LoggedEvent(time_us, event)

    def last_time_us(self) -> int | None:
        """The time of the last event, None for an empty log."""
        return self._marks[-1][1] if self._marks else None
