"""The StatefulSet integration (upstream's ``pkg/controller/jobs/statefulset``): ``workload.py``
(its Workload and the owner rule), ``webhook.py``; its Pods are one pod group of the pod integration."""

from pykueue.jobs.integration import Integration

INTEGRATION = Integration("statefulset", "apps", "StatefulSet", implies=("pod",), owns_pods=True, serving=True)
