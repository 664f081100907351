"""The chart's per-kind tables, rendered from the integration registry: ``charts/pykueue/templates/_integrations.tpl``.

Which webhooks the API server is to call for each job kind and which ClusterRole rules the controller
needs for it are facts of the kind (its ``Integration`` record: ``controller/webhooks/names.py`` names
its hooks from it, ``Integration.grants`` lists its rules), so the chart does not repeat them by hand:
this module writes them as one Helm named template, a YAML document the chart's ``webhooks.yaml`` and
``clusterrole.yaml`` read with ``fromYaml`` and filter by ``integrations.frameworks``. A new kind is then
its folder and its registry line; ``python -m pykueue.manifests.render`` rewrites the table (and the
release manifest), and tests/packaging fails while the committed one is stale. Upstream's counterpart:
the kubebuilder markers beside each kind's webhook and reconciler, from which ``make manifests``
generates config/components.
"""

from __future__ import annotations

import json
from typing import Any

from pykueue.controller.webhooks import names
from pykueue.jobs import registry
from pykueue.kube import resources as r

TABLE_NAME = "pykueue.integrations"
HEADER = (
    "{{- /*\n"
    "Generated from pykueue's integration registry (pykueue/jobs/registry.py, each kind's Integration record)\n"
    "by `python -m pykueue.manifests.render`: do not edit. Read by webhooks.yaml and clusterrole.yaml:\n"
    "mutating and validating are the job kinds' webhooks (controller/webhooks/names.py), each registered while\n"
    "one of its frameworks is on (none: always); rules are the ClusterRole rules each kind needs while one of\n"
    "`on` is and none of `off` is (Integration.grants; a custom kind's children watched when their own\n"
    "integration is off).\n"
    "*/ -}}\n"
)


def _hook(hook: names.Hook) -> dict[str, Any]:
    out: dict[str, Any] = {"name": hook.name, "path": hook.path, "group": hook.group, "version": hook.version,
                           "resources": list(hook.resources), "operations": list(hook.operations),
                           "frameworks": list(hook.frameworks)}
    if hook.managed_only:
        out["managedOnly"] = True
    return out


def _rules() -> list[dict[str, Any]]:
    """Each kind's grants, on while it or a framework implying it is on; then the children a custom kind
    reads that no informer of their own kind watches (a RayJob's RayClusters without the RayCluster
    integration), which its controller then lists and watches itself (``manager._unwatched_children``)."""
    out: list[dict[str, Any]] = []
    for integration in registry.INTEGRATIONS:
        for grant in integration.grants:
            out.append({"group": grant.group if grant.group is not None else integration.group,
                        "resources": list(grant.resources), "verbs": list(grant.verbs),
                        "on": list(names.turned_on_by(integration)), "off": [], "why": grant.why})
    readers: dict[str, list[registry.Integration]] = {}
    for integration in registry.INTEGRATIONS:
        children = integration.live.children if integration.live is not None else None
        if children is not None and children != r.JOB:  # every install watches Jobs
            readers.setdefault(children.kind, []).append(integration)
    for kind, by in readers.items():
        own = registry.BY_KIND[kind]
        out.append({"group": own.group, "resources": [own.resource.plural], "verbs": ["list", "watch"],
                    "on": [i.framework for i in by], "off": [own.framework],
                    "why": f"{own.resource.plural} read as children of {', '.join(i.kind for i in by)} while "
                           f"{own.framework} is off: their own informer"})
    return out


def table() -> dict[str, Any]:
    return {"mutating": [_hook(h) for h in names.MUTATING],
            "validating": [_hook(h) for h in names.VALIDATING_JOBS],
            "rules": _rules()}


def render() -> str:
    """The committed ``_integrations.tpl``: the table as YAML (JSON lines, one entry each)."""
    lines = [HEADER + f'{{{{- define "{TABLE_NAME}" -}}}}']
    for section, entries in table().items():
        lines.append(f"{section}:")
        lines += [f"- {json.dumps(entry)}" for entry in entries]
    lines.append("{{- end }}")
    return "\n".join(lines) + "\n"
