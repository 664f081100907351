{{- /*
Generated from pykueue's integration registry (pykueue/jobs/registry.py, each kind's Integration record)
by `python -m pykueue.manifests.render`: do not edit. Read by webhooks.yaml and clusterrole.yaml:
mutating and validating are the job kinds' webhooks (controller/webhooks/names.py), each registered while
one of its frameworks is on (none: always); rules are the ClusterRole rules each kind needs while one of
`on` is and none of `off` is (Integration.grants; a custom kind's children watched when their own
integration is off).
*/ -}}
{{- define "pykueue.integrations" -}}
mutating:
- {"name": "mjob.kb.io", "path": "/mutate-batch-v1-job", "group": "batch", "version": "v1", "resources": ["jobs"], "operations": ["CREATE"], "frameworks": []}
- {"name": "mpod.kb.io", "path": "/mutate--v1-pod", "group": "", "version": "v1", "resources": ["pods"], "operations": ["CREATE"], "frameworks": ["pod", "statefulset", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset"]}
- {"name": "mrayjob.kb.io", "path": "/mutate-ray-io-v1-rayjob", "group": "ray.io", "version": "v1", "resources": ["rayjobs"], "operations": ["CREATE"], "frameworks": ["ray.io/rayjob"]}
- {"name": "mraycluster.kb.io", "path": "/mutate-ray-io-v1-raycluster", "group": "ray.io", "version": "v1", "resources": ["rayclusters"], "operations": ["CREATE"], "frameworks": ["ray.io/raycluster"]}
- {"name": "mrayservice.kb.io", "path": "/mutate-ray-io-v1-rayservice", "group": "ray.io", "version": "v1", "resources": ["rayservices"], "operations": ["CREATE"], "frameworks": ["ray.io/rayservice"]}
- {"name": "mstatefulset.kb.io", "path": "/mutate-apps-v1-statefulset", "group": "apps", "version": "v1", "resources": ["statefulsets"], "operations": ["CREATE", "UPDATE"], "frameworks": ["statefulset"]}
- {"name": "mdeployment.kb.io", "path": "/mutate-apps-v1-deployment", "group": "apps", "version": "v1", "resources": ["deployments"], "operations": ["CREATE", "UPDATE"], "frameworks": ["deployment"]}
- {"name": "mjobset.kb.io", "path": "/mutate-jobset-x-k8s-io-v1alpha2-jobset", "group": "jobset.x-k8s.io", "version": "v1alpha2", "resources": ["jobsets"], "operations": ["CREATE"], "frameworks": ["jobset.x-k8s.io/jobset"]}
- {"name": "mleaderworkerset.kb.io", "path": "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", "group": "leaderworkerset.x-k8s.io", "version": "v1", "resources": ["leaderworkersets"], "operations": ["CREATE", "UPDATE"], "frameworks": ["leaderworkerset.x-k8s.io/leaderworkerset"]}
- {"name": "mpytorchjob.kb.io", "path": "/mutate-kubeflow-org-v1-pytorchjob", "group": "kubeflow.org", "version": "v1", "resources": ["pytorchjobs"], "operations": ["CREATE"], "frameworks": ["kubeflow.org/pytorchjob"]}
- {"name": "mtfjob.kb.io", "path": "/mutate-kubeflow-org-v1-tfjob", "group": "kubeflow.org", "version": "v1", "resources": ["tfjobs"], "operations": ["CREATE"], "frameworks": ["kubeflow.org/tfjob"]}
- {"name": "mxgboostjob.kb.io", "path": "/mutate-kubeflow-org-v1-xgboostjob", "group": "kubeflow.org", "version": "v1", "resources": ["xgboostjobs"], "operations": ["CREATE"], "frameworks": ["kubeflow.org/xgboostjob"]}
- {"name": "mpaddlejob.kb.io", "path": "/mutate-kubeflow-org-v1-paddlejob", "group": "kubeflow.org", "version": "v1", "resources": ["paddlejobs"], "operations": ["CREATE"], "frameworks": ["kubeflow.org/paddlejob"]}
- {"name": "mjaxjob.kb.io", "path": "/mutate-kubeflow-org-v1-jaxjob", "group": "kubeflow.org", "version": "v1", "resources": ["jaxjobs"], "operations": ["CREATE"], "frameworks": ["kubeflow.org/jaxjob"]}
validating:
- {"name": "vjob.kb.io", "path": "/validate-batch-v1-job", "group": "batch", "version": "v1", "resources": ["jobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["batch/job"]}
- {"name": "vpod.kb.io", "path": "/validate--v1-pod", "group": "", "version": "v1", "resources": ["pods"], "operations": ["CREATE", "UPDATE"], "frameworks": ["pod", "statefulset", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset"], "managedOnly": true}
- {"name": "vrayjob.kb.io", "path": "/validate-ray-io-v1-rayjob", "group": "ray.io", "version": "v1", "resources": ["rayjobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["ray.io/rayjob"]}
- {"name": "vraycluster.kb.io", "path": "/validate-ray-io-v1-raycluster", "group": "ray.io", "version": "v1", "resources": ["rayclusters"], "operations": ["CREATE", "UPDATE"], "frameworks": ["ray.io/raycluster"]}
- {"name": "vrayservice.kb.io", "path": "/validate-ray-io-v1-rayservice", "group": "ray.io", "version": "v1", "resources": ["rayservices"], "operations": ["CREATE", "UPDATE"], "frameworks": ["ray.io/rayservice"]}
- {"name": "vstatefulset.kb.io", "path": "/validate-apps-v1-statefulset", "group": "apps", "version": "v1", "resources": ["statefulsets"], "operations": ["CREATE", "UPDATE"], "frameworks": ["statefulset"]}
- {"name": "vdeployment.kb.io", "path": "/validate-apps-v1-deployment", "group": "apps", "version": "v1", "resources": ["deployments"], "operations": ["CREATE", "UPDATE"], "frameworks": ["deployment"]}
- {"name": "vjobset.kb.io", "path": "/validate-jobset-x-k8s-io-v1alpha2-jobset", "group": "jobset.x-k8s.io", "version": "v1alpha2", "resources": ["jobsets"], "operations": ["CREATE", "UPDATE"], "frameworks": ["jobset.x-k8s.io/jobset"]}
- {"name": "vleaderworkerset.kb.io", "path": "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset", "group": "leaderworkerset.x-k8s.io", "version": "v1", "resources": ["leaderworkersets"], "operations": ["CREATE", "UPDATE"], "frameworks": ["leaderworkerset.x-k8s.io/leaderworkerset"]}
- {"name": "vpytorchjob.kb.io", "path": "/validate-kubeflow-org-v1-pytorchjob", "group": "kubeflow.org", "version": "v1", "resources": ["pytorchjobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["kubeflow.org/pytorchjob"]}
- {"name": "vtfjob.kb.io", "path": "/validate-kubeflow-org-v1-tfjob", "group": "kubeflow.org", "version": "v1", "resources": ["tfjobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["kubeflow.org/tfjob"]}
- {"name": "vxgboostjob.kb.io", "path": "/validate-kubeflow-org-v1-xgboostjob", "group": "kubeflow.org", "version": "v1", "resources": ["xgboostjobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["kubeflow.org/xgboostjob"]}
- {"name": "vpaddlejob.kb.io", "path": "/validate-kubeflow-org-v1-paddlejob", "group": "kubeflow.org", "version": "v1", "resources": ["paddlejobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["kubeflow.org/paddlejob"]}
- {"name": "vjaxjob.kb.io", "path": "/validate-kubeflow-org-v1-jaxjob", "group": "kubeflow.org", "version": "v1", "resources": ["jaxjobs"], "operations": ["CREATE", "UPDATE"], "frameworks": ["kubeflow.org/jaxjob"]}
rules:
- {"group": "", "resources": ["pods"], "verbs": ["delete", "patch", "watch"], "on": ["pod", "statefulset", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset"], "off": [], "why": "the pod integration: an informer on the Pods Kueue gated; ungating with the flavors' node selector, the managed finalizer removed (patch); an evicted Pod deleted"}
- {"group": "", "resources": ["pods/status"], "verbs": ["patch"], "on": ["pod", "statefulset", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset"], "off": [], "why": "an evicted Pod's TerminationTarget condition"}
- {"group": "", "resources": ["pods/finalizers"], "verbs": ["update"], "on": ["pod", "statefulset", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset"], "off": [], "why": "a pod group's Workload owned by its Pods (blockOwnerDeletion)"}
- {"group": "ray.io", "resources": ["rayjobs"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["ray.io/rayjob"], "off": [], "why": "rayjobs: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "ray.io", "resources": ["rayjobs/finalizers"], "verbs": ["update"], "on": ["ray.io/rayjob"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (rayjobs/finalizers)"}
- {"group": "ray.io", "resources": ["rayclusters"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["ray.io/raycluster"], "off": [], "why": "rayclusters: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "ray.io", "resources": ["rayclusters/finalizers"], "verbs": ["update"], "on": ["ray.io/raycluster"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (rayclusters/finalizers)"}
- {"group": "ray.io", "resources": ["rayservices"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["ray.io/rayservice"], "off": [], "why": "rayservices: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "ray.io", "resources": ["rayservices/finalizers"], "verbs": ["update"], "on": ["ray.io/rayservice"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (rayservices/finalizers)"}
- {"group": "apps", "resources": ["statefulsets"], "verbs": ["list", "watch"], "on": ["statefulset"], "off": [], "why": "StatefulSets (controller/jobs/group_owners.py): an informer, so each one's Workload is made from it, named with its UID and owned by it while it has replicas"}
- {"group": "jobset.x-k8s.io", "resources": ["jobsets"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["jobset.x-k8s.io/jobset"], "off": [], "why": "jobsets: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "jobset.x-k8s.io", "resources": ["jobsets/finalizers"], "verbs": ["update"], "on": ["jobset.x-k8s.io/jobset"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (jobsets/finalizers)"}
- {"group": "leaderworkerset.x-k8s.io", "resources": ["leaderworkersets"], "verbs": ["list", "watch"], "on": ["leaderworkerset.x-k8s.io/leaderworkerset"], "off": [], "why": "LeaderWorkerSets (controller/jobs/group_owners.py): an informer, so each group's Workload is made from its LeaderWorkerSet"}
- {"group": "kubeflow.org", "resources": ["pytorchjobs"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["kubeflow.org/pytorchjob"], "off": [], "why": "pytorchjobs: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "kubeflow.org", "resources": ["pytorchjobs/finalizers"], "verbs": ["update"], "on": ["kubeflow.org/pytorchjob"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (pytorchjobs/finalizers)"}
- {"group": "kubeflow.org", "resources": ["tfjobs"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["kubeflow.org/tfjob"], "off": [], "why": "tfjobs: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "kubeflow.org", "resources": ["tfjobs/finalizers"], "verbs": ["update"], "on": ["kubeflow.org/tfjob"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (tfjobs/finalizers)"}
- {"group": "kubeflow.org", "resources": ["xgboostjobs"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["kubeflow.org/xgboostjob"], "off": [], "why": "xgboostjobs: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "kubeflow.org", "resources": ["xgboostjobs/finalizers"], "verbs": ["update"], "on": ["kubeflow.org/xgboostjob"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (xgboostjobs/finalizers)"}
- {"group": "kubeflow.org", "resources": ["paddlejobs"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["kubeflow.org/paddlejob"], "off": [], "why": "paddlejobs: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "kubeflow.org", "resources": ["paddlejobs/finalizers"], "verbs": ["update"], "on": ["kubeflow.org/paddlejob"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (paddlejobs/finalizers)"}
- {"group": "kubeflow.org", "resources": ["jaxjobs"], "verbs": ["get", "list", "patch", "update", "watch"], "on": ["kubeflow.org/jaxjob"], "off": [], "why": "jaxjobs: an informer; suspend, start with the flavors' node selectors and tolerations in their pod templates, stop (get, update, patch)"}
- {"group": "kubeflow.org", "resources": ["jaxjobs/finalizers"], "verbs": ["update"], "on": ["kubeflow.org/jaxjob"], "off": [], "why": "a Workload owned by one sets blockOwnerDeletion (jaxjobs/finalizers)"}
- {"group": "ray.io", "resources": ["rayclusters"], "verbs": ["list", "watch"], "on": ["ray.io/rayjob", "ray.io/rayservice"], "off": ["ray.io/raycluster"], "why": "rayclusters read as children of RayJob, RayService while ray.io/raycluster is off: their own informer"}
{{- end }}
