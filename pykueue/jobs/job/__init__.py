"""The batch/v1 Job integration (upstream's ``pkg/controller/jobs/job``): ``generic.py`` (its
GenericJob), ``webhook.py`` (what may change on a Job); its Workload is ``jobs.batch``'s."""

from pykueue.jobs.integration import Integration

INTEGRATION = Integration("batch/job", "batch", "Job", owns_pods=True)
