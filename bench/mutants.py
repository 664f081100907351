"""Hand-written mutants of the engine, and which tests kill each one (issue 9).

Each mutant is one textual change to one engine file: a rule broken the way a plausible bug would
break it. For each, the script applies the change in a CLONE, runs the engine, simulator and scenario
tests there, restores the file, and reports the tests that failed (a mutant no test kills survived).
Run it in a clone, never in a working tree you are editing:

    git clone -q . /tmp/mutants && cd /tmp/mutants && python -m venv .venv && . .venv/bin/activate \
        && pip install -q -e '.[test,report]'
    python bench/mutants.py --repo /tmp/mutants            # every mutant, about 90 s each here
    python bench/mutants.py --repo /tmp/mutants --only c,g  # some of them

The changes are written against the engine as it is when this file was written; a mutant whose text is
no longer in its file is reported as ``stale`` (rewrite it for the new code) rather than skipped
silently. ``docs/testing.md`` has the table of the last run.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TESTS = ["tests/engine", "tests/sim", "tests/test_scenarios.py"]


@dataclass(frozen=True)
class Mutant:
    key: str
    what: str
    path: str  # or several, "a.py|b.py": the first that holds ``old`` (the engine's files move)
    old: str
    new: str


MUTANTS = [
    Mutant("a", "the scheduler never admits (returns before admit)", "pykueue/engine/scheduler.py",
           "        self.admit(cq, info, assignment, now)\n        return True\n",
           "        return True\n"),
    Mutant("b", "fair sharing's rounded share: math.ceil -> math.floor", "pykueue/engine/fair_sharing.py",
           "    return math.ceil(value)\n", "    return math.floor(value)\n"),
    Mutant("c", "partial admission without its give-back step", "pykueue/engine/podset_reducer.py",
           "    return _give_back(full, best_counts, best, fits)\n", "    return best\n"),
    Mutant("d", "borrowingLimit ignored in quota.available", "pykueue/engine/quota.py",
           "    if q is not None and q.borrowing_limit is not None:\n        local = node.local_quota(fr)\n",
           "    if False:\n        local = node.local_quota(fr)\n"),
    Mutant("e", "lendingLimit ignored (nothing is kept local)", "pykueue/engine/quota.py",
           "            if q.lending_limit is not None\n        }\n",
           "            if False\n        }\n"),
    Mutant("f", "preemption candidates: oldest admitted first instead of newest",
           "pykueue/engine/preemption/common.py|pykueue/engine/preemption.py",
           "        -(info.reserved_us or 0),\n        -info.order_us,\n",
           "        (info.reserved_us or 0),\n        info.order_us,\n"),
    Mutant("f2", "the per-queue victim order: oldest admitted first", "pykueue/engine/cluster.py",
           "    return (info.priority, -(info.reserved_us or 0), -info.order_us, -info.seq)\n",
           "    return (info.priority, info.reserved_us or 0, info.order_us, info.seq)\n"),
    Mutant("g", "StrictFIFO treated as BestEffortFIFO (the scheduler's check)", "pykueue/engine/scheduler.py",
           "        strict = cq.spec.queueing_strategy == model.STRICT_FIFO\n",
           "        strict = False\n"),
    Mutant("g2", "StrictFIFO treated as BestEffortFIFO (the queue's own check only)", "pykueue/engine/queues.py",
           "        if cls is None or (self.strategy != BEST_EFFORT_FIFO and not always):\n",
           "        if cls is None:\n"),
    Mutant("h", "pods-ready backoff exponent off by one", "pykueue/engine/engine.py",
           "* (2 ** (info.requeue_count - 1))", "* (2 ** info.requeue_count)"),
    Mutant("i", "reclaimablePods ignored in usage_of", "pykueue/engine/workload.py",
           "        count = max(0, psa.count - wl.reclaimable_pods.get(ps.name, 0))\n",
           "        count = psa.count\n"),
    Mutant("j", "namespaceSelector always matches", "pykueue/engine/engine.py",
           "        return selector_matches(cq.spec.namespace_selector, self.namespace_labels(namespace))\n",
           "        return True\n"),
]


def run_tests(repo: Path, extra: list[str], stall: float) -> tuple[list[str], float, str]:
    """The tests that fail with the mutant in place. A test that hangs (no output for ``stall``
    seconds) is reported as ``HUNG <test>`` and the run goes on without it."""
    started = time.monotonic()
    failed: set[str] = set()
    deselect: list[str] = []
    while True:
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-v", "--tb=no", "-p", "no:cacheprovider",
                 "-m", "not cluster and not e2e and not binaries", *TESTS, *extra, *(f"--deselect={d}" for d in deselect)],
                cwd=repo, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            )
            size, quiet_since = -1, time.monotonic()
            while proc.poll() is None:
                time.sleep(2)
                now_size = os.fstat(out.fileno()).st_size
                if now_size != size:
                    size, quiet_since = now_size, time.monotonic()
                elif time.monotonic() - quiet_since > stall:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
            out.seek(0)
            text = out.read()
        failed |= {m.group(1) for m in re.finditer(r"^(\S+::\S+) (?:FAILED|ERROR)", text, re.M)}
        if proc.returncode != -signal.SIGKILL:
            lines = text.strip().splitlines()
            return sorted(failed), time.monotonic() - started, lines[-1].strip("= ") if lines else ""
        hung = re.findall(r"^(\S+::\S+) *$", text, re.M)
        if not hung or len(deselect) >= 10:
            return sorted(failed | {"HUNG (unknown test)"}), time.monotonic() - started, "stopped"
        failed.add(f"HUNG {hung[-1]}")
        deselect.append(hung[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, required=True, help="a clone of the project (its files are changed)")
    ap.add_argument("--only", default="", help="comma-separated mutant keys (default: all)")
    ap.add_argument("--stall", type=float, default=300, help="seconds without test output that count as a hang")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the mutated file is restored
    repo = args.repo.resolve()
    wanted = {k for k in args.only.split(",") if k}
    survived = 0
    for mutant in MUTANTS:
        if wanted and mutant.key not in wanted:
            continue
        found = [repo / p for p in mutant.path.split("|")
                 if (repo / p).exists() and (repo / p).read_text().count(mutant.old) == 1]
        if not found:
            print(f"({mutant.key}) stale: the text to change is not in {mutant.path} exactly once", flush=True)
            continue
        path = found[0]
        original = path.read_text()
        path.write_text(original.replace(mutant.old, mutant.new))
        try:
            failed, seconds, tail = run_tests(repo, args.pytest_args, args.stall)
        finally:
            path.write_text(original)
        survived += not failed
        print(f"({mutant.key}) {mutant.what}: {'SURVIVED' if not failed else f'killed by {len(failed)}'} "
              f"[{seconds:.0f} s; {tail}]", flush=True)
        for test in failed:
            print(f"    {test}", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
