"""The CRD generator without a cluster: structural rules, the schema conversion, defaults that keep
pykueue's meaning, and the committed ``config/crd/kueue.x-k8s.io.yaml`` being current."""

from __future__ import annotations

import argparse
import copy
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, get_args

import pytest
import yaml
from pydantic import Field

from pykueue.api.documents import parse_file
from pykueue.api.loader import load_documents
from pykueue.api.models import kueue_v1beta2 as v2
from pykueue.api.models.base import ApiModel, Quantity
from pykueue.controller.webhooks import names as webhook_names
from pykueue.manifests import command, crds
from pykueue.quantity import parse_quantity
from tests.manifests.examples import ROOT, SOURCES, V1BETA2, all_examples

COMMITTED = ROOT / "config" / "crd" / "kueue.x-k8s.io.yaml"
REFRESH = "python -m pykueue.manifests crds > config/crd/kueue.x-k8s.io.yaml  (or: pykueue manifests crds > ...)"

ALLOWED_KEYWORDS = {
    "type", "format", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems", "minProperties", "maxProperties", "multipleOf", "required",
    "properties", "items", "additionalProperties", "default", "description", "anyOf",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations",
}
SCALAR_TYPES = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    return {k.kind: crds.kind_schema(k) for k in crds.KINDS}


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node with its path (``a.b[]`` an item of list b, ``m{}`` a value of map m)."""
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


# --- the committed file -------------------------------------------------------------------------------


def test_committed_crds_are_current() -> None:
    assert COMMITTED.exists(), f"{COMMITTED.relative_to(ROOT)} is missing; create it with: {REFRESH}"
    assert COMMITTED.read_text() == crds.to_yaml(crds.crds()), (
        f"{COMMITTED.relative_to(ROOT)} is stale (the models or the generator changed); refresh it with: {REFRESH}"
    )


def test_command_prints_every_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.run(argparse.Namespace(verb="crds", output_dir=None)) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["spec"]["names"]["kind"] for d in docs] == [k.kind for k in crds.KINDS]


def test_command_writes_one_file_per_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crd"
    assert command.main(["crds", "-o", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(f"kueue.x-k8s.io_{k.plural}.yaml" for k in crds.KINDS)
    workloads = yaml.safe_load((out / "kueue.x-k8s.io_workloads.yaml").read_text())
    assert workloads["metadata"]["name"] == "workloads.kueue.x-k8s.io"
    assert str(out / "kueue.x-k8s.io_workloads.yaml") in capsys.readouterr().out


def test_command_reports_an_unwritable_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert command.run(argparse.Namespace(verb="crds", output_dir=blocker / "crd")) == 2
    assert capsys.readouterr().err.startswith("pykueue: error: ")


# --- names, versions, subresources ------------------------------------------------------------------------


def test_names_scopes_and_versions() -> None:
    docs = {d["spec"]["names"]["kind"]: d for d in crds.crds()}
    assert set(docs) == {"ResourceFlavor", "ClusterQueue", "Cohort", "WorkloadPriorityClass", "AdmissionCheck",
                         "LocalQueue", "Workload", "MultiKueueConfig", "MultiKueueCluster"}
    namespaced = {kind for kind, d in docs.items() if d["spec"]["scope"] == "Namespaced"}
    assert namespaced == {"LocalQueue", "Workload"}
    assert docs["ClusterQueue"]["spec"]["names"]["shortNames"] == ["cq"]
    assert docs["LocalQueue"]["spec"]["names"]["shortNames"] == ["queue", "queues", "lq"]
    assert docs["ResourceFlavor"]["spec"]["names"]["shortNames"] == ["flavor", "flavors", "rf"]
    assert docs["Workload"]["spec"]["names"]["shortNames"] == ["wl"]
    for kind, d in docs.items():
        assert d["metadata"]["name"] == f"{d['spec']['names']['plural']}.kueue.x-k8s.io"
        assert d["spec"]["names"]["singular"] == kind.lower()
        stored, served = d["spec"]["versions"]  # v1beta2 first: kubectl's preferred version
        assert (stored["name"], stored["served"], stored["storage"]) == ("v1beta2", True, True)
        assert (served["name"], served["served"], served["storage"]) == ("v1beta1", True, False)
        for version in (stored, served):
            has_status = "status" in version["schema"]["openAPIV3Schema"]["properties"]
            assert ("subresources" in version) == has_status
            assert [c["name"] for c in version.get("additionalPrinterColumns", [])] == [
                c["name"] for c in crds.kind_named(kind).columns]
    columns = [[c["jsonPath"] for c in v["additionalPrinterColumns"]] for v in docs["ClusterQueue"]["spec"]["versions"]]
    assert columns[0][0] == ".spec.cohortName" and columns[1][0] == ".spec.cohort"  # each version's own field


def test_the_kinds_whose_shape_changed_are_converted_by_the_webhook() -> None:
    """As upstream: ClusterQueue, Cohort, LocalQueue, Workload and MultiKueueCluster through the controller's /convert (a
    Service with no CA bundle: the controller patches its own in); the others only change apiVersion."""
    docs = {d["spec"]["names"]["plural"]: d for d in crds.crds()}
    converted = {plural for plural, d in docs.items() if "conversion" in d["spec"]}
    assert converted == set(webhook_names.CONVERTED_PLURALS) == {"clusterqueues", "cohorts", "localqueues", "workloads",
                                                                    "multikueueclusters"}
    for plural in converted:
        assert docs[plural]["spec"]["conversion"] == {
            "strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"name": "pykueue-webhook-service", "namespace": "pykueue-system",
                                                     "path": "/convert", "port": 443}},
                        "conversionReviewVersions": ["v1"]},
        }
    v1 = {k.kind: crds.kind_schema(k, crds.V1BETA1)["properties"] for k in crds.KINDS}
    assert "cohort" in v1["ClusterQueue"]["spec"]["properties"] and "cohortName" not in v1["ClusterQueue"]["spec"]["properties"]
    assert {"priorityClassName", "priorityClassSource"} <= set(v1["Workload"]["spec"]["properties"])
    assert "accumulatedPastExexcutionTimeSeconds" in v1["Workload"]["status"]["properties"]
    assert "flavorUsage" in v1["LocalQueue"]["status"]["properties"]
    assert "retryDelayMinutes" in v1["AdmissionCheck"]["spec"]["properties"]


# --- structural rules -------------------------------------------------------------------------------------


def test_schemas_are_structural(schemas: dict[str, dict[str, Any]]) -> None:
    v1beta1 = {f"{k.kind} v1beta1": crds.kind_schema(k, crds.V1BETA1) for k in crds.KINDS}
    for kind, schema in {**schemas, **v1beta1}.items():
        assert schema["type"] == "object"
        assert schema["properties"]["metadata"] == {"type": "object"}
        for path, node in _nodes(schema):
            where = f"{kind}: {path or '<root>'}"
            assert set(node) <= ALLOWED_KEYWORDS, f"{where}: {set(node) - ALLOWED_KEYWORDS}"
            int_or_string = node.get("x-kubernetes-int-or-string") is True
            preserved = node.get("x-kubernetes-preserve-unknown-fields") is True
            assert "type" in node or int_or_string or preserved, f"{where}: untyped"
            if "anyOf" in node:  # only the int-or-string form, and never beside a type
                assert int_or_string and "type" not in node, where
                assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], where
            if node.get("type") == "object":
                assert not ("properties" in node and "additionalProperties" in node), where
            for name in node.get("required", []):
                assert name in node.get("properties", {}), f"{where}: required {name} is not a property"
            if node.get("x-kubernetes-list-type") == "map":
                item = node["items"]
                for key in node["x-kubernetes-list-map-keys"]:
                    assert key in item.get("required", []) or "default" in item["properties"][key], where
            if "default" in node and "type" in node:
                assert isinstance(node["default"], SCALAR_TYPES[node["type"]]), where
            for rule in node.get("x-kubernetes-validations", []):
                assert set(rule) - {"fieldPath"} == {"rule", "message"} and rule["message"], where


def test_quantities_are_int_or_string_with_the_quantity_pattern(schemas: dict[str, dict[str, Any]]) -> None:
    cq = schemas["ClusterQueue"]
    quota = crds.node_at(cq, "spec.resourceGroups[].flavors[].resources[].nominalQuota")
    assert quota == crds.quantity()
    usage = crds.node_at(schemas["Workload"], "status.admission.podSetAssignments[].resourceUsage{}")
    assert usage == crds.quantity()


QUANTITY_SAMPLES = ["1", "0", "500m", "1.5", ".5", "1.", "+1", "-1", "1Gi", "36Gi", "1e3", "1E-3", "2k", "1M",
                    "ten", "1 Gi", "1Gb", "", "1.2.3", "e3", "1ki", "--1", "0x10", "1e", "Gi"]


@pytest.mark.parametrize("text", QUANTITY_SAMPLES)
def test_quantity_pattern_agrees_with_pykueues_parser(text: str) -> None:
    try:
        parse_quantity(text)
        parsed = True
    except ValueError:
        parsed = False
    assert (re.fullmatch(crds.QUANTITY_PATTERN, text) is not None) == parsed


def test_enums_come_from_the_models(schemas: dict[str, dict[str, Any]]) -> None:
    strategy = crds.node_at(schemas["ClusterQueue"], "spec.queueingStrategy")
    assert strategy["enum"] == list(get_args(get_args(v2.ClusterQueueSpec.model_fields["queueing_strategy"].annotation)[0]))
    stop = crds.node_at(schemas["LocalQueue"], "spec.stopPolicy")
    assert stop["enum"] == ["None", "Hold", "HoldAndDrain"]


def test_pod_templates_and_unmodelled_parts_are_kept_open(schemas: dict[str, dict[str, Any]]) -> None:
    template = crds.node_at(schemas["Workload"], "spec.podSets[].template")
    assert template == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    for kind, path in [("AdmissionCheck", "spec.parameters"), ("ClusterQueue", "spec.concurrentAdmissionPolicy"),
                       ("Workload", "status.schedulingStats")]:
        assert crds.node_at(schemas[kind], path)["x-kubernetes-preserve-unknown-fields"] is True


def test_status_schemas(schemas: dict[str, dict[str, Any]]) -> None:
    wl = schemas["Workload"]["properties"]["status"]
    conditions = wl["properties"]["conditions"]
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == ("map", ["type"])
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert conditions["items"]["properties"]["lastTransitionTime"] == {"type": "string", "format": "date-time"}
    checks = wl["properties"]["admissionChecks"]
    assert checks["x-kubernetes-list-map-keys"] == ["name"]
    assert checks["items"]["properties"]["podSetUpdates"]["items"]["x-kubernetes-preserve-unknown-fields"]
    assert set(wl["properties"]) >= {"admission", "requeueState", "reclaimablePods", "resourceRequests",
                                     "accumulatedPastExecutionTimeSeconds", "schedulingStats"}
    cq = schemas["ClusterQueue"]["properties"]["status"]["properties"]
    assert set(cq) >= {"conditions", "flavorsReservation", "flavorsUsage", "pendingWorkloads", "reservingWorkloads",
                       "admittedWorkloads", "fairSharing"}
    assert set(cq["flavorsUsage"]["items"]["properties"]["resources"]["items"]["properties"]) == {
        "name", "total", "borrowed"}
    lq = schemas["LocalQueue"]["properties"]["status"]["properties"]
    assert {"flavorsReservation", "flavorsUsage", "pendingWorkloads", "admittedWorkloads"} <= set(lq)
    assert set(schemas["Cohort"]["properties"]["status"]["properties"]) == {"conditions", "fairSharing"}
    assert set(schemas["AdmissionCheck"]["properties"]["status"]["properties"]) == {"conditions"}


# --- the conversion itself, on small models ---------------------------------------------------------------


class _Toy(ApiModel):
    size: int = Field(ge=1, le=5)
    ratio: int | None = Field(default=None, gt=0)
    code: str = Field(pattern=r"^[a-z]+$", max_length=3)
    mode: Literal["A", "B"] = "A"
    only: Literal["X"] | None = None
    labels: dict[str, str] | None = None
    amounts: dict[str, Quantity] | None = None
    free: Any = None
    loose: dict[str, Any] | None = None
    level: Literal[1, 2] = 1


def test_model_schema_converts_pydantic_constraints() -> None:
    schema = crds.model_schema(_Toy)
    props = schema["properties"]
    assert props["size"] == {"type": "integer", "format": "int32", "minimum": 1, "maximum": 5}
    assert props["ratio"] == {"type": "integer", "minimum": 0, "exclusiveMinimum": True}
    assert props["code"] == {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3}
    assert props["mode"] == {"type": "string", "enum": ["A", "B"], "default": "A"}
    assert props["only"] == {"type": "string", "enum": ["X"]}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["amounts"] == {"type": "object", "additionalProperties": crds.quantity()}
    assert props["free"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["loose"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["level"] == {"type": "integer", "enum": [1, 2], "default": 1}
    assert schema["required"] == ["size", "code"]
    assert "$defs" not in str(schema) and "additionalProperties': False" not in str(schema)


class _Union(ApiModel):
    either: int | str


def test_a_union_of_types_has_no_structural_form() -> None:
    with pytest.raises(crds.SchemaError, match="either"):
        crds.model_schema(_Union)


def test_a_table_path_that_does_not_exist_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(crds.DEFAULTS, "Cohort", {"spec.fairSharing.wieght": 1})
    with pytest.raises(crds.SchemaError, match="wieght"):
        crds.schema_of("Cohort")


# --- defaults -------------------------------------------------------------------------------------------


def test_defaults_are_exactly_the_documented_ones(schemas: dict[str, dict[str, Any]]) -> None:
    model_defaults = {
        "Workload": {"spec.podSets[].name": "main", "spec.podSets[].count": 1,
                     "status.admission.podSetAssignments[].name": "main"},
    }
    for kind, schema in schemas.items():
        found = {path: node["default"] for path, node in _nodes(schema) if "default" in node}
        assert found == {**crds.DEFAULTS.get(kind, {}), **model_defaults.get(kind, {})}, kind


def test_apply_defaults_fills_in_top_down_and_prunes_nulls(schemas: dict[str, dict[str, Any]]) -> None:
    got = crds.apply_defaults(schemas["ClusterQueue"], {"spec": {"cohortName": None, "fairSharing": {}}})
    assert got["spec"] == {
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never",
                       "borrowWithinCohort": {"policy": "Never"}},
        "fairSharing": {"weight": 1},
    }


def _load(path: Path, default: dict[str, dict[str, Any]] | None) -> tuple[Any, list[str]]:
    docs = []
    for raw in parse_file(str(path), path.read_text()):
        doc = copy.deepcopy(raw.content)
        if default is not None and isinstance(doc, dict) and doc.get("apiVersion") == V1BETA2 and doc.get("kind") in default:
            doc = crds.apply_defaults(default[doc["kind"]], doc)
        docs.append(doc)
    inputs, problems = load_documents(docs, str(path))
    return inputs, [str(p) for p in problems]


def test_defaults_do_not_change_what_pykueue_reads(schemas: dict[str, dict[str, Any]]) -> None:
    """Every example, read as applied and as the API server gives it back, is the same engine input."""
    for path in SOURCES:
        as_applied = _load(path, None)
        as_stored = _load(path, schemas)
        assert as_stored == as_applied, f"{path.relative_to(ROOT)}: the CRD's defaults change its meaning"
    defaulted = [ex for ex in all_examples() if crds.apply_defaults(schemas[ex.doc["kind"]], ex.doc) != ex.doc]
    assert len(defaulted) > 100  # the defaults were really exercised


def test_the_meaning_check_would_notice_a_wrong_default(schemas: dict[str, dict[str, Any]]) -> None:
    wrong = copy.deepcopy(schemas)
    crds.node_at(wrong["ClusterQueue"], "spec.queueingStrategy")["default"] = "StrictFIFO"
    path = next(
        ex.file for ex in all_examples() if ex.doc["kind"] == "ClusterQueue" and "queueingStrategy" not in ex.doc.get("spec", {})
    )
    assert _load(path, wrong) != _load(path, None)


def test_defaulted_weight_reads_as_pykueues_default_weight() -> None:
    assert parse_quantity(crds.DEFAULTS["Cohort"]["spec.fairSharing.weight"]) == Fraction(1)
