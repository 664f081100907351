"""Job integrations: turning workload APIs (batch/v1 Job, ...) into Kueue Workloads and back."""
