"""Write the HTML report of a scenario and take a headless Chromium screenshot of it.

    python bench/screenshot_report.py [PATH ...] [--generator FILE [--rangespec FILE]] [--out FILE.png]

Defaults to ``pykueue/examples/`` and ``docs/images/report.png``. Chromium (Debian's ``chromium``
package) renders the page offline; the script then dumps the rendered DOM and fails when a chart did
not turn into SVG or the console logged a JavaScript error, so a broken page never becomes a picture.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--virtual-time-budget=5000",
]


def write_report(paths: list[str], generator: str | None, rangespec: str | None, html_path: Path) -> None:
    from pykueue.sim.report import queue_classes_from_manifests
    from pykueue.sim.report import write_report as write
    from pykueue.sim.result import build_result
    from pykueue.sim.simulator import Simulation

    classes = None
    if generator:
        from pykueue.perf.run import load_generator_inputs, summary_of

        inputs, problems, manifests = load_generator_inputs(generator)
        classes = queue_classes_from_manifests(manifests)
    else:
        from pykueue.api.loader import load_paths

        inputs, problems = load_paths(paths)
        manifests = None
    if problems:
        sys.exit("\n".join(str(p) for p in problems))
    run = Simulation(inputs, record_usage=True, record_reasons=True).run()
    result = build_result(run)
    if manifests is not None:
        result["summary"] = summary_of(result, manifests)
    write(run, result, str(html_path), inputs=[generator] if generator else paths, rangespec=rangespec,
          queue_classes=classes)


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium is not installed (Debian: apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=300, check=False)


def check_rendered(url: str) -> list[str]:
    """Problems of the rendered page: charts left without SVG, JavaScript errors on the console."""
    dom = chromium("--enable-logging=stderr", "--v=0", "--dump-dom", url)
    divs = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div[^"]*js-plotly-plot', dom.stdout)
    expected = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div', dom.stdout)
    problems = [f"{d}: not rendered by plotly" for d in expected if d not in divs]
    if expected and dom.stdout.count("<svg") < len(expected):
        problems.append(f"{dom.stdout.count('<svg')} svg elements for {len(expected)} charts")
    if not expected:
        problems.append("no chart in the page")
    problems += [line for line in dom.stderr.splitlines()
                 if "CONSOLE" in line and ("Error" in line or "error" in line)]
    return problems


def _shown(path: Path) -> str:
    """Paths inside the repository (or beside it, like shared/) relative to it: the picture names no
    machine's folders."""
    return os.path.relpath(path, ROOT) if path.is_relative_to(ROOT.parent) else str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "pykueue" / "examples")])
    parser.add_argument("--generator")
    parser.add_argument("--rangespec")
    parser.add_argument("--out", default=str(ROOT / "docs" / "images" / "report.png"))
    parser.add_argument("--html", help="keep the report here (default: a temporary file)")
    parser.add_argument("--window-size", default="1400,2400")
    args = parser.parse_args()
    args.out = str(Path(args.out).resolve())
    if args.html:
        args.html = str(Path(args.html).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        html_path = Path(args.html) if args.html else Path(tmp) / "report.html"
        absolute = [Path(p).resolve() for p in args.paths]
        os.chdir(ROOT)
        paths = [_shown(p) for p in absolute]
        generator, rangespec = (None if p is None else _shown(Path(p).resolve())
                                for p in (args.generator, args.rangespec))
        write_report(paths, generator, rangespec, html_path)
        url = html_path.resolve().as_uri()
        problems = check_rendered(url)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        Path(args.out).unlink(missing_ok=True)
        shot = chromium(f"--window-size={args.window_size}", f"--screenshot={Path(args.out).resolve()}", url)
        if shot.returncode != 0 or not Path(args.out).exists():
            print(shot.stderr, file=sys.stderr)
            return 1
    print(f"{args.out}: screenshot of the report of {args.generator or ' '.join(args.paths)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
