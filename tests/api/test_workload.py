"""Workloads: requests as Kueue charges them, placement constraints, priority, status, validation."""

import pytest

from pykueue.engine import model

from .helpers import Loader, only_problem


def _workload(pod_spec: str, extra_spec: str = "", api_version: str = "kueue.x-k8s.io/v1beta2") -> str:
    pod = "\n".join("          " + line for line in pod_spec.strip("\n").splitlines())
    extra = "\n".join("  " + line for line in extra_spec.strip("\n").splitlines())
    return (
        f"apiVersion: {api_version}\nkind: Workload\nmetadata:\n  name: wl\n  namespace: ns\n"
        f"spec:\n  queueName: lq\n{extra}\n  podSets:\n  - name: main\n    count: 2\n    template:\n"
        f"      spec:\n{pod}\n"
    )


def _requests(load: Loader, pod_spec: str) -> dict[str, int]:
    inputs, problems = load(_workload(pod_spec))
    assert problems == []
    return dict(inputs.workloads[0].workload.pod_sets[0].requests)


def test_init_containers_and_limits_only_containers(load: Loader) -> None:
    requests = _requests(
        load,
        """
        initContainers:
        - name: setup
          resources:
            requests: {cpu: "3"}
            limits: {memory: 1Gi}
        containers:
        - name: a
          resources:
            limits: {cpu: 500m, memory: 200Mi}
        - name: b
          resources:
            requests: {cpu: 1}
            limits: {cpu: 2, example.com/gpu: 1}
        """,
    )
    # containers: cpu 0.5 (limit) + 1 (request wins over limit) = 1.5; init needs 3 -> 3
    # memory: 200Mi (limit) vs init 1Gi -> 1Gi; the gpu only has a limit -> 1
    assert requests == {"cpu": 3000, "example.com/gpu": 1, "memory": 2**30}


def test_sidecars_add_up_and_overhead_is_added(load: Loader) -> None:
    requests = _requests(
        load,
        """
        initContainers:
        - name: proxy
          restartPolicy: Always
          resources: {requests: {cpu: 250m, memory: 64Mi}}
        - name: migrate
          resources: {requests: {cpu: 1, memory: 100Mi}}
        containers:
        - name: main
          resources: {requests: {cpu: 500m, memory: 128Mi}}
        overhead: {cpu: 100m}
        """,
    )
    # running: main + proxy = 750m / 192Mi; starting: migrate + proxy = 1250m / 164Mi
    assert requests == {"cpu": 1250 + 100, "memory": 192 * 2**20}


def test_pod_level_resources_only_raise_the_aggregate(load: Loader) -> None:
    requests = _requests(
        load,
        """
        resources:
          requests: {cpu: 2}
          limits: {memory: 1Gi}
        containers:
        - name: a
          resources: {requests: {cpu: 500m, memory: 2Gi}}
        """,
    )
    assert requests == {"cpu": 2000, "memory": 2 * 2**30}


def test_placement_constraints(load: Loader) -> None:
    inputs, problems = load(
        _workload(
            """
            nodeSelector: {gpu: a100}
            tolerations:
            - {key: spot, operator: Exists, effect: NoSchedule}
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - {key: zone, operator: In, values: [a, b]}
                  - matchExpressions:
                    - {key: arch, operator: Exists}
            containers:
            - name: a
              resources: {requests: {cpu: 1}}
            """
        )
    )
    assert problems == []
    pod_set = inputs.workloads[0].workload.pod_sets[0]
    assert pod_set == model.PodSet(
        name="main",
        count=2,
        requests={"cpu": 1000},
        node_selector={"gpu": "a100"},
        required_affinity=(
            model.NodeSelectorTerm((model.Requirement("zone", "In", ("a", "b")),)),
            model.NodeSelectorTerm((model.Requirement("arch", "Exists", ()),)),
        ),
        tolerations=(model.Toleration("spot", "Exists", "", "NoSchedule"),),
    )


CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pod-high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pod-default}
value: 7
globalDefault: true
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: wl-high}
value: 500
---
"""
CONTAINERS = "containers:\n- name: a\n  resources: {requests: {cpu: 1}}"


@pytest.mark.parametrize(
    ("extra", "api_version", "expected"),
    [
        ("priority: 3", "kueue.x-k8s.io/v1beta2", (3, None, None)),
        (
            "priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: wl-high}",
            "kueue.x-k8s.io/v1beta2",
            (500, "wl-high", "kueue.x-k8s.io/workloadpriorityclass"),
        ),
        (
            "priorityClassRef: {group: scheduling.k8s.io, kind: PriorityClass, name: pod-high}\npriority: 42",
            "kueue.x-k8s.io/v1beta2",
            (42, "pod-high", "scheduling.k8s.io/priorityclass"),
        ),
        (
            "priorityClassName: wl-high\npriorityClassSource: kueue.x-k8s.io/workloadpriorityclass\npriority: 500",
            "kueue.x-k8s.io/v1beta1",
            (500, "wl-high", "kueue.x-k8s.io/workloadpriorityclass"),
        ),
        (
            "priorityClassName: pod-high\npriorityClassSource: scheduling.k8s.io/priorityclass",
            "kueue.x-k8s.io/v1beta1",
            (1000, "pod-high", "scheduling.k8s.io/priorityclass"),
        ),
        ("", "kueue.x-k8s.io/v1beta2", (0, None, None)),  # a hand-written Workload does not get the default
    ],
    ids=[
        "explicit",
        "workload class",
        "explicit beats class",
        "v1beta1 workload class",
        "v1beta1 pod class",
        "none",
    ],
)
def test_priority(
    load: Loader, extra: str, api_version: str, expected: tuple[int, str | None, str | None]
) -> None:
    inputs, problems = load(CLASSES + _workload(CONTAINERS, extra, api_version))
    assert problems == []
    wl = inputs.workloads[0].workload
    assert (wl.priority, wl.priority_class_name, wl.priority_class_source) == expected


def test_missing_priority_class_is_an_error(load: Loader) -> None:
    inputs, problems = load(
        _workload(
            CONTAINERS, "priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: nope}"
        )
    )
    problem = only_problem(problems)
    assert (problem.kind, problem.namespace, problem.name) == ("Workload", "ns", "wl")
    assert (problem.path, problem.message) == (
        "spec.priorityClassRef.name",
        'WorkloadPriorityClass "nope" not found',
    )
    assert inputs.workloads == []


def test_active_admission_and_reclaimable_pods(load: Loader) -> None:
    inputs, problems = load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata: {name: running, namespace: ns}
        spec:
          queueName: lq
          active: false
          podSets:
          - name: driver
            template: {spec: {containers: [{name: a, resources: {requests: {cpu: 1}}}]}}
          - name: workers
            count: 4
            minCount: 2
            template: {spec: {containers: [{name: a, resources: {requests: {cpu: 1}}}]}}
        status:
          admission:
            clusterQueue: cq
            podSetAssignments:
            - name: driver
              flavors: {cpu: on-demand}
            - name: workers
              count: 3
              flavors: {cpu: spot}
              resourceUsage: {cpu: "3"}
          reclaimablePods:
          - {name: workers, count: 1}
        """
    )
    assert problems == []
    wl = inputs.workloads[0].workload
    assert wl.active is False
    assert [(ps.name, ps.count, ps.min_count) for ps in wl.pod_sets] == [
        ("driver", 1, None),
        ("workers", 4, 2),
    ]
    assert wl.admission == model.Admission(
        "cq",
        (
            model.PodSetAssignment("driver", 1, {"cpu": "on-demand"}),
            model.PodSetAssignment("workers", 3, {"cpu": "spot"}),
        ),
    )
    assert wl.reclaimable_pods == {"workers": 1}


def _pod_sets(*pod_sets: str) -> str:
    return (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: wl}\nspec:\n  podSets:\n"
        + "".join(pod_sets)
    )


def _ps(name: str, extra: str = "", containers: str = "[{name: a}]") -> str:
    return f"  - name: {name}\n{extra}    template: {{spec: {{containers: {containers}}}}}\n"


INVALID = {
    "no pod sets": (
        _pod_sets().replace("podSets:\n", "podSets: []\n"),
        "spec.podSets",
        "must have at least 1 item",
    ),
    "too many pod sets": (_pod_sets(*[_ps(f"p{i}") for i in range(11)]), "spec.podSets", "Too many: 11"),
    "pod set names are unique": (
        _pod_sets(_ps("a"), _ps("a")),
        "spec.podSets[1].name",
        'Duplicate value: "a"',
    ),
    "pod set name is a DNS label": (_pod_sets(_ps("A.b")), "spec.podSets[0].name", "RFC 1123 label"),
    "negative count": (
        _pod_sets(_ps("a", "    count: -1\n")),
        "spec.podSets[0].count",
        "greater than or equal to 0",
    ),
    "minCount above count": (
        _pod_sets(_ps("a", "    count: 2\n    minCount: 3\n")),
        "spec.podSets[0].minCount",
        "less or equal to count",
    ),
    "minCount at least 1": (
        _pod_sets(_ps("a", "    count: 2\n    minCount: 0\n")),
        "spec.podSets[0].minCount",
        "greater than or equal to 1",
    ),
    "only one minCount": (
        _pod_sets(_ps("a", "    count: 2\n    minCount: 1\n"), _ps("b", "    count: 2\n    minCount: 1\n")),
        "spec.podSets",
        "at most one podSet can use minCount",
    ),
    "pods is reserved in requests": (
        _pod_sets(_ps("a", containers="[{name: c, resources: {requests: {pods: 1}}}]")),
        "spec.podSets[0].template.spec.containers[0].resources.requests[pods]",
        "reserved for internal kueue use",
    ),
    "pods is reserved in init container limits": (
        _pod_sets(
            _ps("a").replace(
                "{spec: {", "{spec: {initContainers: [{name: i, resources: {limits: {pods: 1}}}], "
            )
        ),
        "spec.podSets[0].template.spec.initContainers[0].resources.limits[pods]",
        "reserved for internal kueue use",
    ),
    "negative request": (
        _pod_sets(_ps("a", containers="[{name: c, resources: {requests: {memory: -1Gi}}}]")),
        "spec.podSets[0].template.spec.containers[0].resources.requests[memory]",
        "must be greater than or equal to 0",
    ),
    "container needs a name": (
        _pod_sets(_ps("a", containers="[{image: x}]")),
        "spec.podSets[0].template.spec.containers[0].name",
        "Required value",
    ),
    "unknown pod spec field": (
        _pod_sets(_ps("a").replace("{spec: {", "{spec: {nodeSelecter: {a: b}, ")),
        "spec.podSets[0].template.spec.nodeSelecter",
        "unknown field",
    ),
    "node affinity operator": (
        _pod_sets(
            _ps("a").replace(
                "{spec: {",
                "{spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                "{nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Is}]}]}}}, ",
            )
        ),
        "spec.podSets[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operator",
        'Unsupported value: "Is"',
    ),
    "queue name": (
        _pod_sets(_ps("a")).replace("spec:\n", "spec:\n  queueName: Q_1\n"),
        "spec.queueName",
        "RFC 1123 subdomain",
    ),
    "priorityClassRef group and kind": (
        _pod_sets(_ps("a")).replace(
            "spec:\n",
            "spec:\n  priority: 1\n  priorityClassRef: {group: kueue.x-k8s.io, kind: PriorityClass, name: x}\n",
        ),
        "spec.priorityClassRef",
        "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
    ),
    "priorityClassSource enum": (
        _pod_sets(_ps("a"))
        .replace("v1beta2", "v1beta1")
        .replace("spec:\n", "spec:\n  priorityClassName: x\n  priorityClassSource: pod\n"),
        "spec.priorityClassSource",
        'Unsupported value: "pod"',
    ),
    "active is a boolean": (
        _pod_sets(_ps("a")).replace("spec:\n", "spec:\n  active: 'no'\n"),
        "spec.active",
        "must be a boolean",
    ),
    "admission names a known pod set": (
        _pod_sets(_ps("a"))
        + "status:\n  admission:\n    clusterQueue: cq\n    podSetAssignments:\n    - name: b\n",
        "status.admission.podSetAssignments[0].name",
        'Not found: "b"',
    ),
    "admission covers every pod set": (
        _pod_sets(_ps("a"), _ps("b"))
        + "status:\n  admission:\n    clusterQueue: cq\n    podSetAssignments:\n    - name: a\n",
        "status.admission.podSetAssignments",
        "same number of podSets as the spec",
    ),
    "resource usage is a multiple of the count": (
        _pod_sets(_ps("a", "    count: 3\n"))
        + "status:\n  admission:\n    clusterQueue: cq\n    podSetAssignments:\n    - name: a\n      resourceUsage: {cpu: 1}\n",
        "status.admission.podSetAssignments[0].resourceUsage[cpu]",
        "is not a multiple of 3",
    ),
    "reclaimable pods of a known pod set": (
        _pod_sets(_ps("a")) + "status:\n  reclaimablePods: [{name: b, count: 1}]\n",
        "status.reclaimablePods[b].name",
        'Unsupported value: "b"',
    ),
    "reclaimable pods at most the count": (
        _pod_sets(_ps("a", "    count: 2\n")) + "status:\n  reclaimablePods: [{name: a, count: 3}]\n",
        "status.reclaimablePods[a].count",
        "should be less or equal to 2",
    ),
}


@pytest.mark.parametrize(("manifest", "path", "message"), list(INVALID.values()), ids=list(INVALID))
def test_invalid_workload(load: Loader, manifest: str, path: str, message: str) -> None:
    inputs, problems = load(manifest)
    problem = only_problem(problems)
    assert (problem.kind, problem.namespace, problem.name, problem.path) == (
        "Workload",
        "default",
        "wl",
        path,
    )
    assert message in problem.message
    assert inputs.workloads == []


def test_workload_without_queue_name_is_accepted(load: Loader) -> None:
    inputs, problems = load(_pod_sets(_ps("a")))
    assert problems == []
    assert inputs.workloads[0].workload.queue_name == ""


def test_many_workloads_share_one_validated_spec(load: Loader) -> None:
    docs = "---\n".join(_workload(CONTAINERS).replace("name: wl", f"name: wl-{i}") for i in range(3))
    inputs, problems = load(docs)
    assert problems == []
    pod_sets = [sw.workload.pod_sets for sw in inputs.workloads]
    assert [sw.workload.name for sw in inputs.workloads] == ["wl-0", "wl-1", "wl-2"]
    assert pod_sets[0] is pod_sets[1] is pod_sets[2]


def test_errors_of_a_shared_spec_are_reported_for_each_document(load: Loader) -> None:
    bad = _pod_sets(_ps("a", "    count: -1\n"))
    _, problems = load(bad + "---\n" + bad.replace("name: wl", "name: wl2"))
    assert [(p.name, p.path) for p in problems] == [
        ("wl", "spec.podSets[0].count"),
        ("wl2", "spec.podSets[0].count"),
    ]
