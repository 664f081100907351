"""The Workload spec cache: equal specs in different objects are validated once, and what the cache
keeps of a long spec is a fixed-size digest, never its text (a pasted spec's size is the sender's)."""

from __future__ import annotations

import copy

from pykueue.api.kinds import KUEUE_V1BETA1
from pykueue.api.workloads import MAX_KEPT_TEXT, WorkloadReader

V1BETA2 = "kueue.x-k8s.io/v1beta2"
SPEC = {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}


def test_equal_specs_share_one_validation_and_the_cache_keeps_only_digests() -> None:
    reader = WorkloadReader()
    first, errors = reader.spec(V1BETA2, SPEC)
    assert first is not None and errors == []
    again, _ = reader.spec(V1BETA2, copy.deepcopy(SPEC))
    assert again is first  # the same validated spec: found by content
    big = copy.deepcopy(SPEC)
    big["podSets"][0]["template"]["spec"]["containers"][0]["args"] = ["x" * 100_000]
    reader.spec(V1BETA2, big)
    assert max(len(key) for _, key in reader._specs_by_text) <= MAX_KEPT_TEXT
    assert any(isinstance(key, bytes) and len(key) == 16 for _, key in reader._specs_by_text)
    again_big, _ = reader.spec(V1BETA2, copy.deepcopy(big))
    assert again_big is reader.spec(V1BETA2, big)[0]
    other, _ = reader.spec(KUEUE_V1BETA1, copy.deepcopy(SPEC))  # another version is another entry
    assert other is not first
