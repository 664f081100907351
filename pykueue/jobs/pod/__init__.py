"""The pod integration (upstream's ``pkg/controller/jobs/pod``): plain Pods and pod groups
(``workload.py``, ``groups.py``, ``shape.py``, ``webhook.py``), and what the kinds that queue their Pods
through it share (``serving.py``). Beneath those kinds: it imports none of them."""

from pykueue.jobs.integration import Integration
from pykueue.kube import resources as r

INTEGRATION = Integration("pod", r.POD, validates_managed_only=True)
