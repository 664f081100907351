"""The JobSet integration (upstream's ``pkg/controller/jobs/jobset``): ``workload.py`` (its Workload
and webhook rules, shared with the simulator), ``generic.py`` (its GenericJob)."""

from pykueue.jobs.integration import Integration, Reading
from pykueue.jobs.jobset import workload

INTEGRATION = Integration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "JobSet", reading=Reading(
    workload.validate, workload.workloads, workload.template_paths, workload.priority_class_path))
