"""Does every random valid scenario end? The long run of tests/sim/test_fuzz_settle.py (issue 14).

Draws scenarios from ``tests/sim/scenario_fuzz.py`` (flavors, nested cohorts, every preemption policy,
fair sharing, waitForPodsReady, admission check scripts, timed changes) with fresh seeds for as long as
asked, and plays each in-process with a step budget. A scenario that exceeds the budget, raises
anything but the simulator's "cannot settle" error, or is rejected by the loader is written to
``--keep`` and counted as a failure; the exit status is 1 if there was any.

    python bench/fuzz_settle.py --seconds 600 [--seed 1] [--keep /tmp/fuzz-failures]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the generator lives with the tests

from tests.sim.scenario_fuzz import STEP_BUDGET, play, random_scenario  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="stop drawing new scenarios after this long")
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock)")
    ap.add_argument("--keep", type=Path, default=Path("fuzz-failures"), help="where failing scenarios go")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    deadline = time.monotonic() + args.seconds
    outcomes: Counter[str] = Counter()
    worst_steps = 0
    worst_seconds = 0.0
    failures = 0
    n = 0
    while time.monotonic() < deadline:
        rng = random.Random(seed + n)  # one seed per scenario: a failure is replayed from its seed alone
        text, until = random_scenario(rng)
        start = time.perf_counter()
        try:
            outcome = play(text, until, STEP_BUDGET)
        except Exception:  # noqa: BLE001 - every failure is recorded, then the search goes on
            failures += 1
            args.keep.mkdir(parents=True, exist_ok=True)
            out = args.keep / f"seed-{seed + n}.yaml"
            out.write_text(f"# until: {until}\n# {traceback.format_exc(limit=3)!r}\n{text}")
            print(f"FAIL seed {seed + n}: {traceback.format_exc(limit=1).strip().splitlines()[-1]} -> {out}")
        else:
            outcomes[outcome.message.split(":")[0] if outcome.exit else "settled"] += 1
            worst_steps = max(worst_steps, outcome.steps)
        worst_seconds = max(worst_seconds, time.perf_counter() - start)
        n += 1
    print(f"{n} scenarios from seed {seed}: {dict(outcomes)}; {failures} failure(s)")
    print(f"most steps in one run: {worst_steps} (budget {STEP_BUDGET}); slowest run: {worst_seconds:.2f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
