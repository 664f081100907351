"""`pykueue controller`: run the engine against a Kubernetes API server."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from pykueue.engine import model


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("controller", help="run Kueue's admission against a Kubernetes API server",
                       description="Admit Jobs and Workloads on a real cluster with the simulator's engine.")
    p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig to use (default: the pod's service account)")
    p.add_argument("--config", metavar="FILE", help="a Kueue Configuration (config.kueue.x-k8s.io)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                   help="the least severe records written (default: info, one line per decision)")
    p.add_argument("--log-format", default="logfmt", choices=("logfmt", "json"),
                   help="one structured line per record: key=value (default) or JSON")


def _config(path: str | None) -> tuple[model.Config | None, list[str]]:
    if path is None:
        return model.Config(), []
    from pykueue.api.loader import load_paths

    inputs, problems = load_paths([], path)
    return (None, [str(p) for p in problems]) if problems else (inputs.config, [])


def run(args: argparse.Namespace) -> int:
    from pykueue.controller import logs

    logs.setup(args.log_level, getattr(args, "log_format", "logfmt"))
    config, problems = _config(args.config)
    if config is None:
        for line in problems:
            print(line, file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(args.kubeconfig, config))
    except KeyboardInterrupt:
        return 130


async def _main(kubeconfig: str | None, config: model.Config) -> int:
    from pykueue.controller.kube.client import Kube
    from pykueue.controller.manager import Controller

    try:
        kube = await Kube.connect(kubeconfig)
    except Exception as exc:  # noqa: BLE001 - a bad kubeconfig is one line, not a traceback
        print(f"pykueue: error: cannot connect to the API server: {exc}", file=sys.stderr)
        return 2
    controller = Controller(kube, config)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await controller.run()
    except asyncio.CancelledError:
        logging.getLogger("pykueue.controller").info("stopping")
    finally:
        await kube.close()
    return 0
