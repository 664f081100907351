"""The StatefulSet's MultiKueue adapter (upstream's ``statefulset_multikueue_adapter.go``): the worker gets
the StatefulSet with the manager's UID in an annotation, so the worker's reconciler names its Workload as
the manager's (the copy it already holds) and makes none of its own. StatefulSets have no managedBy: the
manager's own controller keeps its status (its Pods stay gated there), so nothing is mirrored."""

from pykueue.jobs.multikueue import Adapter, always_managed, never_mirrored, whole_spec
from pykueue.kube import resources as r

ADAPTER = Adapter(r.STATEFULSET, unmanaged=always_managed, spec=whole_spec, mirrored=never_mirrored, origin_uid=True)
