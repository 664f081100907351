"""`pykueue image build`: the controller's image from Debian's packages, for clusters with no registry."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``image`` on the CLI's subcommands."""
    p = sub.add_parser(
        "image",
        help="build the controller's image from Debian's packages (no registry needed)",
        description="The image the chart and config/manifests.yaml run, built without a registry base image.",
    )
    verbs = p.add_subparsers(dest="verb", required=True)
    verbs.add_parser(
        "build",
        help="build (or reuse) the image and print its OCI archive's path",
        description="Build the chart's default image, pykueue:VERSION, as an OCI archive for `ctr images "
                    "import` or `podman load`: a Debian bookworm tree made by mmdebstrap (python3 and its venv "
                    "module), the package installed with pip into /opt/pykueue, run as 65532:65532 with "
                    "`pykueue` as entrypoint, as the Dockerfile builds it. Needs root and Debian's mmdebstrap; "
                    "cached outside the clone ($PYKUEUE_CACHE_DIR, else ~/.cache/pykueue) under a key of the "
                    "package's sources, so a second run prints the same path at once. Progress goes to "
                    "stderr, the archive's path to stdout.",
    )


def run(args: argparse.Namespace) -> int:
    """Exit 0 with the archive's path on stdout, 2 with one ``pykueue: error:`` line otherwise."""
    from pykueue.devcluster import binaries, image  # subprocess, tempfile: only when the command runs

    try:
        return binaries.report(image.ensure)
    except OSError as exc:  # the cache directory not writable, the disk full
        print(f"pykueue: error: building the image: {exc}", file=sys.stderr)
        return 2
