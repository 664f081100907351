"""A Ray integration on a cluster without KubeRay's CRDs waits for them (one warning), and starts
once the API server serves them."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pykueue.controller.manager import Controller
from pykueue.devcluster import kuberay
from pykueue.devcluster.cluster import DevCluster
from pykueue.engine import model
from pykueue.kube import resources as r
from pykueue.kube.client import Kube

pytestmark = pytest.mark.cluster


def test_waits_for_the_raycluster_crd_then_goes_on(control_plane: DevCluster, caplog: pytest.LogCaptureFixture) -> None:
    crd = kuberay.ensure() / "crds" / "ray.io_rayclusters.yaml"

    async def scenario() -> None:
        kube = await Kube.connect(str(control_plane.kubeconfig))
        try:
            controller = Controller(kube, model.Config(frameworks=("ray.io/raycluster",)))
            waiting = asyncio.create_task(controller._served(r.RAY_CLUSTER))
            for _ in range(200):  # the warning is the signal that it is waiting
                if any("waits for its CRD" in rec.getMessage() for rec in caplog.records):
                    break
                await asyncio.sleep(0.05)
            warnings = [rec for rec in caplog.records if rec.getMessage() == "the integration waits for its CRD"]
            assert len(warnings) == 1 and warnings[0].fields == {"crd": "rayclusters.ray.io", "kind": "RayCluster"}
            assert not waiting.done()
            await asyncio.to_thread(control_plane.kubectl, "apply", "--server-side", "-f", str(crd))
            await asyncio.wait_for(waiting, 60)
            assert len([rec for rec in caplog.records if "waits for its CRD" in rec.getMessage()]) == 1
        finally:
            await kube.close()

    caplog.set_level(logging.WARNING, logger="pykueue.controller")
    try:
        asyncio.run(scenario())
    finally:
        control_plane.kubectl("delete", "crd", "rayclusters.ray.io", "--ignore-not-found", check=False)
