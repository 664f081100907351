"""Virtual time is an integer number of microseconds end to end (issue 14), as a property.

Random microsecond-precise arrivals, pods-ready timeouts, backoffs and admission check delays are
written as the user would write them (Go durations in YAML), loaded and simulated. Every time the
simulator logs and every time the engine keeps must be an ``int``, and every timer must fire exactly
at the microsecond computed here with integers: a float sum used to land one rounding error after the
instant the clock rounds to, so a backoff never expired and the clock stood still.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api.loader import load_paths
from pykueue.engine import events as ev
from pykueue.engine.model import US
from pykueue.sim.simulator import Run, Simulation

STEP_BUDGET = 2_000


def duration(us: int, style: int) -> str:
    """``us`` microseconds written exactly, in one of several spellings."""
    if style == 0:
        return f"{us // US}.{us % US:06d}s"
    if style == 1:
        return f"{us}us"
    return f"{us // 1000}.{us % 1000:03d}ms"


WORKLOAD = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: default
  annotations: {{{notes}}}
spec:
  queueName: {queue}
  podSets: [{{name: main, count: 1, template: {{spec: {{restartPolicy: Never, containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}]
"""

QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec: {controllerName: example.com/prov}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: plain}
spec:
  namespaceSelector: {}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: checked}
spec:
  namespaceSelector: {}
  admissionChecksStrategy: {admissionChecks: [{name: prov}]}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: plain, namespace: default}
spec: {clusterQueue: plain}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: checked, namespace: default}
spec: {clusterQueue: checked}
"""


def simulate(text: str) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.yaml"
        path.write_text(text)
        inputs, problems = load_paths([str(path)], None)
    assert not problems, [str(p) for p in problems]
    return Simulation(inputs, step_budget=STEP_BUDGET).run()


micros = st.integers(1, 20 * US)  # 1 us .. 20 s, any microsecond


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    arrival=st.integers(0, 5 * US), timeout=micros, base=st.integers(0, 90), cap=st.integers(1, 200),
    limit=st.integers(0, 4), retry=st.integers(0, 20 * US), ready=st.integers(0, 20 * US),
    styles=st.tuples(*[st.integers(0, 2)] * 4),
)
def test_every_time_is_an_exact_integer(arrival: int, timeout: int, base: int, cap: int, limit: int, retry: int,
                                        ready: int, styles: tuple[int, ...]) -> None:
    config = f"""\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady:
  enable: true
  blockAdmission: false
  timeout: {duration(timeout, styles[0])}
  requeuingStrategy: {{backoffBaseSeconds: {base}, backoffMaxSeconds: {cap}, backoffLimitCount: {limit}}}
---
"""
    a = duration(arrival, styles[1])
    never = WORKLOAD.format(name="never", queue="plain",
                            notes=f'pykueue.dev/arrival: "{a}", pykueue.dev/ready-after: never')
    checks = f"prov=Retry@{duration(retry, styles[2])},Ready@{duration(ready, styles[3])}"
    checked = WORKLOAD.format(name="checked", queue="checked",
                              notes=f'pykueue.dev/arrival: "{a}", pykueue.dev/ready-after: "0s", '
                                    f'pykueue.dev/admission-checks: "{checks}"')
    run = simulate(config + QUEUES + never + checked)

    # Every time kept anywhere is an int.
    assert all(type(e.time_us) is int for e in run.log)
    assert type(run.end_us) is int
    for info in run.engine.workloads.values():
        for t in (info.order_us, info.reserved_us, info.admitted_us, info.finished_us, info.evicted_us, info.requeue_us):
            assert t is None or type(t) is int
    # The pods that are never ready: admitted at arrival, evicted `timeout` later each time, back after
    # min(base * 2^(n-1), cap) seconds (at once when that is 0), deactivated at the (limit + 1)th timeout.
    expected = []
    t = arrival
    for n in range(1, limit + 2):
        expected += [(t, ev.QUOTA_RESERVED, None), (t, ev.ADMITTED, None)]
        t += timeout
        if n == limit + 1:
            # At the limit Kueue deactivates: one eviction, reason Deactivated.
            expected.append((t, ev.EVICTED, ev.EVICTED_DEACTIVATED))
            expected.append((t, ev.DEACTIVATED, "RequeuingLimitExceeded"))
            break
        expected.append((t, ev.EVICTED, ev.EVICTED_PODS_READY_TIMEOUT))
        delay = min(base * 2 ** (n - 1), cap) * US
        t += delay
        expected.append((t, ev.REQUEUED, "BackoffFinished" if delay else ev.EVICTED_PODS_READY_TIMEOUT))
    got = [(e.time_us, e.event.type, e.event.reason) for e in run.log if e.event.workload == "default/never"]
    assert got == expected
    # The checked workload: Retry `retry` after its first reservation (evicted, requeued and reserved
    # again at once), Ready `ready` after the second; its pods are ready at once, so it stays admitted.
    got = [(e.time_us, e.event.type) for e in run.log if e.event.workload == "default/checked"]
    assert got == [
        (arrival, ev.QUOTA_RESERVED), (arrival + retry, ev.EVICTED), (arrival + retry, ev.REQUEUED),
        (arrival + retry, ev.QUOTA_RESERVED), (arrival + retry + ready, ev.ADMITTED),
    ]
