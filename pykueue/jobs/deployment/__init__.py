"""The Deployment integration (upstream's ``pkg/controller/jobs/deployment``): ``workload.py``,
``webhook.py``; each of its Pods is a Workload of the pod integration."""

from pykueue.jobs.integration import Integration

INTEGRATION = Integration("deployment", "apps", "Deployment", implies=("pod",), serving=True)
