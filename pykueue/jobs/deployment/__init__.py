"""The Deployment integration (upstream's ``pkg/controller/jobs/deployment``): ``workload.py``,
``webhook.py``; each of its Pods is a Workload of the pod integration."""

from pykueue.jobs.deployment import webhook, workload
from pykueue.jobs.integration import Integration, Reading
from pykueue.jobs.pod import serving
from pykueue.kube import resources as r

INTEGRATION = Integration("deployment", r.DEPLOYMENT, implies=("pod",), serving=True, mutates_on=("CREATE", "UPDATE"),
                          reading=Reading(
    serving.validate, workload.workloads_from_deployment, workload.template_paths, members=True),
                          webhooks=serving.webhooks(webhook.deployment_defaults, webhook.validate_deployment_update))
