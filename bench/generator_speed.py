"""How long the perf generator takes to build upstream's large-scale scenario (moved out of the tests).

``tests/perf/test_perf_generator.py`` checks what the generator builds for the large-scale config
(50,000 Workloads, 1,000 ClusterQueues); how fast it builds them is a property of the machine as much
as of the code, so it is measured here instead: best of ``--repeat`` builds, against ``--limit``
seconds (2 s, the bound the test used to assert; about 0.5 s on the 2-core CI machine). Exit status 1
when the best build is over the limit, 2 when the shared perf configs are not there.

    python bench/generator_speed.py [--repeat 3] [--limit 2.0] [--config PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pykueue.perf.generator import build_manifests, load_generator

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = next(
    (p for p in (ROOT.parent / "shared" / "perf" / "large-scale" / "generator.yaml",
                 Path("/work/shared/perf/large-scale/generator.yaml")) if p.exists()),
    ROOT.parent / "shared" / "perf" / "large-scale" / "generator.yaml",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=DEFAULT, help="generator config (default: upstream's large-scale)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=2.0, help="seconds the best build may take")
    args = ap.parse_args()
    if not args.config.exists():
        print(f"{args.config}: not found (the shared perf configs are not available)", file=sys.stderr)
        return 2
    cfg = load_generator(args.config)
    times = []
    objects = 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        objects = len(build_manifests(cfg))
        times.append(time.perf_counter() - start)
    best = min(times)
    print(f"{args.config}: {objects} objects built in {best:.3f} s (best of {args.repeat}: "
          f"{', '.join(f'{t:.3f}' for t in times)}); limit {args.limit:.2f} s")
    return 0 if best <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
