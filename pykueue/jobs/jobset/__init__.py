"""The JobSet integration (upstream's ``pkg/controller/jobs/jobset``): ``workload.py`` (its Workload
and webhook rules, shared with the simulator), ``generic.py`` (its GenericJob)."""

from pykueue.jobs.integration import Integration, Live, Reading, Webhooks, custom_kind_grants
from pykueue.jobs.jobset import generic, multikueue, webhook, workload
from pykueue.kube import resources as r

INTEGRATION = Integration("jobset.x-k8s.io/jobset", r.JOBSET, own_controller=webhook.OWN_CONTROLLER, reading=Reading(
    workload.validate, workload.workloads, workload.template_paths, workload.priority_class_path),
    webhooks=Webhooks(webhook.default, webhook.validate_create, webhook.validate_update),
                          multikueue=multikueue.ADAPTER, grants=custom_kind_grants(r.JOBSET),
                          live=Live(generic.is_managed, generic.wrap, r.JOB, generic.owning_jobset))
