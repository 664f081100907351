"""``pykueue manifests crds``: print (or write) the CRDs a cluster needs before pykueue can run on it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _add_verbs(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="verb", required=True)
    c = verbs.add_parser(
        "crds",
        help="Kueue's CustomResourceDefinitions (kueue.x-k8s.io/v1beta2), from pykueue's models",
        description="Print every CRD as one multi-document YAML, or write one file per CRD with -o.",
    )
    c.add_argument("-o", "--output-dir", type=Path, metavar="DIR",
                   help="write DIR/kueue.x-k8s.io_<plural>.yaml for each CRD instead of printing")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``manifests`` on the CLI's subcommands."""
    p = sub.add_parser(
        "manifests",
        help="print the Kubernetes manifests pykueue installs (CRDs)",
        description="Generate the Kubernetes manifests a cluster needs to run pykueue.",
    )
    _add_verbs(p)


def run(args: argparse.Namespace) -> int:
    """Exit 0 on success, 2 with one ``pykueue: error:`` line when a file cannot be written."""
    from pykueue.manifests import crds  # the API models: loaded only when the command runs

    documents = crds.crds()
    if args.output_dir is None:
        sys.stdout.write(crds.to_yaml(documents))
        return 0
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for document in documents:
            path = args.output_dir / crds.file_name(document)
            path.write_text(crds.to_yaml([document]))
            print(path)
    except OSError as exc:
        print(f"pykueue: error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m pykueue.manifests crds``, for use before the CLI hooks the command in."""
    parser = argparse.ArgumentParser(prog="python -m pykueue.manifests")
    _add_verbs(parser)
    return run(parser.parse_args(argv))
