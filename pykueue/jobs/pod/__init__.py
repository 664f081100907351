"""The pod integration (upstream's ``pkg/controller/jobs/pod``): plain Pods and pod groups
(``workload.py``, ``groups.py``, ``shape.py``, ``webhook.py``), and what the kinds that queue their Pods
through it share (``serving.py``). Beneath those kinds: it imports none of them."""

from pykueue.jobs.integration import Grant, Integration, Webhooks
from pykueue.jobs.pod import multikueue, webhook
from pykueue.kube import resources as r

INTEGRATION = Integration("pod", r.POD, validates_managed_only=True, defaults_off=True,
                          webhooks=Webhooks(webhook.default, webhook.hook_create, webhook.hook_update),
                          multikueue=multikueue.ADAPTER, grants=(
    Grant(("pods",), ("delete", "patch", "watch"), "the pod integration: an informer on the Pods Kueue gated; "
          "ungating with the flavors' node selector, the managed finalizer removed (patch); an evicted Pod deleted"),
    Grant(("pods/status",), ("patch",), "an evicted Pod's TerminationTarget condition"),
    Grant(("pods/finalizers",), ("update",), "a pod group's Workload owned by its Pods (blockOwnerDeletion)")))
