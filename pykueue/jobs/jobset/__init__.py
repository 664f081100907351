"""The JobSet integration (upstream's ``pkg/controller/jobs/jobset``): ``workload.py`` (its Workload
and webhook rules, shared with the simulator), ``generic.py`` (its GenericJob)."""

from pykueue.jobs.integration import Integration

INTEGRATION = Integration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "JobSet")
