"""The batch/v1 Job integration (upstream's ``pkg/controller/jobs/job``): ``workload.py`` (the Workload a
Job becomes, what admission injects, what eviction restores), ``generic.py`` (its GenericJob),
``webhook.py`` (what may change on a Job)."""

from pykueue.jobs.integration import Integration, Webhooks
from pykueue.jobs.job import multikueue, webhook
from pykueue.kube import resources as r

INTEGRATION = Integration("batch/job", r.JOB, owns_pods=True, mutating_always=True,
                          own_controller=webhook.OWN_CONTROLLER,
                          webhooks=Webhooks(webhook.default, webhook.validate_create, webhook.validate_update),
                          multikueue=multikueue.ADAPTER)
