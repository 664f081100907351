"""The API resources the controller reads and writes, and their REST paths."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """One kind as the API server serves it."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """`/api/v1/namespaces/NS/pods/NAME/status`, or the collection across namespaces."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


KUEUE = "kueue.x-k8s.io"
RESOURCE_FLAVOR = Resource(KUEUE, "v1beta2", "resourceflavors", "ResourceFlavor", False)
CLUSTER_QUEUE = Resource(KUEUE, "v1beta2", "clusterqueues", "ClusterQueue", False)
COHORT = Resource(KUEUE, "v1beta2", "cohorts", "Cohort", False)
LOCAL_QUEUE = Resource(KUEUE, "v1beta2", "localqueues", "LocalQueue", True)
WORKLOAD = Resource(KUEUE, "v1beta2", "workloads", "Workload", True)
WORKLOAD_PRIORITY_CLASS = Resource(KUEUE, "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass", False)
ADMISSION_CHECK = Resource(KUEUE, "v1beta2", "admissionchecks", "AdmissionCheck", False)
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", False)
PRIORITY_CLASS = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)
JOB = Resource("batch", "v1", "jobs", "Job", True)
POD = Resource("", "v1", "pods", "Pod", True)
STATEFULSET = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
CORE_EVENT = Resource("", "v1", "events", "Event", True)
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
RAY_CLUSTER = Resource("ray.io", "v1", "rayclusters", "RayCluster", True)
RAY_JOB = Resource("ray.io", "v1", "rayjobs", "RayJob", True)
RAY_SERVICE = Resource("ray.io", "v1", "rayservices", "RayService", True)
JOBSET = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", True)
LEADERWORKERSET = Resource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", True)
MULTIKUEUE_CONFIG = Resource(KUEUE, "v1beta2", "multikueueconfigs", "MultiKueueConfig", False)
MULTIKUEUE_CLUSTER = Resource(KUEUE, "v1beta2", "multikueueclusters", "MultiKueueCluster", False)
SECRET = Resource("", "v1", "secrets", "Secret", True)
