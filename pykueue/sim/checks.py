"""The simulator's script of admission check states: ``pykueue.dev/admission-checks``.

Value: ``CHECK=STATE@DELAY[,STATE@DELAY...][;CHECK=...]``. For each check, the entries apply to the
workload's successive quota reservations (the first to the first reservation, and so on; the last one
repeats); DELAY counts from that reservation. STATE is Ready, Retry, Rejected or Pending. A check the
annotation does not name stays Pending, so the workload stays QuotaReserved.

Example: ``prov=Retry@10s,Ready@5s;budget=Ready@0s``: the first reservation is retried by ``prov``
after 10 s; on the second, ``prov`` turns Ready 5 s after it; ``budget`` is Ready at once every time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykueue.api.timing import CHECK_STATES as STATES
from pykueue.api.timing import parse_admission_checks as parse_script

ANNOTATION = "pykueue.dev/admission-checks"

Script = Mapping[str, Sequence[tuple[str, float]]]  # parsed by the API layer (SubmittedWorkload.checks)
__all__ = ["ANNOTATION", "STATES", "Script", "parse_script", "step_for"]


def step_for(script: Script, check: str, reservation: int) -> tuple[str, float] | None:
    """The (state, delay) that applies to the ``reservation``-th (1-based) quota reservation."""
    entries = script.get(check)
    if not entries:
        return None
    return entries[min(reservation, len(entries)) - 1]
