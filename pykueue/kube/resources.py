"""The API resources the controller reads and writes, and their REST paths.

A name or namespace becomes one segment of a path only if it cannot change which path it is: as
client-go's ``Request.Name`` and ``Request.Namespace`` refuse what apimachinery's
``path.IsValidPathSegmentName`` refuses ('.', '..', anything with '/' or '%'), plus '?' and '#'
(client-go's ``url.URL`` would escape those; here they are refused too, as no name the controller
uses may hold them) and an empty name or namespace (which would name the collection instead).
Whatever else is not plain URL text (a space, a control or non-ASCII character) is percent-quoted.
The error is ``InvalidPathSegment``, before any request is made.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import quote

_NOT_IN_A_SEGMENT = ("/", "%", "?", "#")
_PLAIN = re.compile(r"[A-Za-z0-9._~:@!$&'()*+,;=-]+")  # RFC 3986 pchar, nothing to quote


class InvalidPathSegment(ValueError):
    """A name or namespace that cannot be one segment of a REST path (client-go: ``invalid resource
    name %q: %v``)."""


def segment(value: str, what: str = "resource name") -> str:
    """``value`` as one path segment, or ``InvalidPathSegment`` saying why it cannot be one."""
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value not in (".", ".."):
        return value  # every DNS name: the path as it always was
    if not isinstance(value, str):
        raise InvalidPathSegment(f"invalid {what} {value!r}: must be a string")
    if not value:
        raise InvalidPathSegment(f'invalid {what} "": may not be empty')
    shown = json.dumps(value if len(value) <= 80 else value[:77] + "...")
    if value in (".", ".."):
        raise InvalidPathSegment(f"invalid {what} {shown}: may not be '{value}'")
    for char in _NOT_IN_A_SEGMENT:
        if char in value:
            raise InvalidPathSegment(f"invalid {what} {shown}: may not contain '{char}'")
    return quote(value, safe="")


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
        """`/api/v1/namespaces/NS/pods/NAME/status`, or the collection across namespaces; a name or
        namespace that would make it another path is ``InvalidPathSegment`` (see the module's docstring)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{segment(namespace, 'namespace')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{segment(name)}"
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
DEPLOYMENT = Resource("apps", "v1", "deployments", "Deployment", True)
CORE_EVENT = Resource("", "v1", "events", "Event", True)
LEASE = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
RAY_CLUSTER = Resource("ray.io", "v1", "rayclusters", "RayCluster", True)
RAY_JOB = Resource("ray.io", "v1", "rayjobs", "RayJob", True)
RAY_SERVICE = Resource("ray.io", "v1", "rayservices", "RayService", True)
JOBSET = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", True)
LEADERWORKERSET = Resource("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", True)
PYTORCH_JOB = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", True)
TF_JOB = Resource("kubeflow.org", "v1", "tfjobs", "TFJob", True)
XGBOOST_JOB = Resource("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob", True)
PADDLE_JOB = Resource("kubeflow.org", "v1", "paddlejobs", "PaddleJob", True)
JAX_JOB = Resource("kubeflow.org", "v1", "jaxjobs", "JAXJob", True)
MPI_JOB = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", True)
MULTIKUEUE_CONFIG = Resource(KUEUE, "v1beta2", "multikueueconfigs", "MultiKueueConfig", False)
MULTIKUEUE_CLUSTER = Resource(KUEUE, "v1beta2", "multikueueclusters", "MultiKueueCluster", False)
SECRET = Resource("", "v1", "secrets", "Secret", True)
