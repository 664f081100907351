"""The JobSet integration (upstream's ``pkg/controller/jobs/jobset``): ``workload.py`` (its Workload
and webhook rules, shared with the simulator), ``generic.py`` (its GenericJob)."""

from pykueue.jobs.integration import Integration, Reading
from pykueue.jobs.jobset import workload
from pykueue.kube import resources as r

INTEGRATION = Integration("jobset.x-k8s.io/jobset", r.JOBSET, own_controller="jobset.sigs.k8s.io/jobset-controller", reading=Reading(
    workload.validate, workload.workloads, workload.template_paths, workload.priority_class_path))
