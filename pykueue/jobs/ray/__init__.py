"""The KubeRay integrations (upstream's ``pkg/controller/jobs/{rayjob,raycluster,rayservice}``):
``workload.py`` (the Workloads), ``generic.py`` (the GenericJobs), ``webhook.py``."""

from pykueue.jobs.integration import Integration

INTEGRATIONS = (
    Integration("ray.io/rayjob", "ray.io", "RayJob"),
    Integration("ray.io/raycluster", "ray.io", "RayCluster", owns_pods=True),
    Integration("ray.io/rayservice", "ray.io", "RayService"),
)
