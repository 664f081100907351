"""The errors of the kueuectl verbs, kept free of heavy imports so that the CLI loads fast.

``CliError`` is the one line a verb prints; ``ApiStatus`` a refusal from the API server, which
``explain`` turns into kubectl's words for it: a ``NotFound`` Status for a named object is that object
missing, while a bare ``404 page not found`` means the server does not serve the resource at all,
that is, Kueue's CRDs are not installed.
"""

from __future__ import annotations

from typing import Any

from pykueue.kube.resources import Resource

INSTALL_HINT = "install them with: pykueue manifests crds | kubectl apply --server-side -f -"


class CliError(Exception):
    """What went wrong, in one line: the verb prints ``pykueue VERB: error: <it>`` and exits 1."""


class ApiStatus(Exception):
    """A non-2xx answer. ``body`` is the decoded Status when the server sent one (a JSON object)."""

    def __init__(self, status: int, body: dict[str, Any] | None, text: str, method: str, path: str) -> None:
        self.status = status
        self.body = body
        self.text = text
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: {status} {self.reason}: {self.message}")

    @property
    def reason(self) -> str:
        return str((self.body or {}).get("reason") or "")

    @property
    def message(self) -> str:
        return str((self.body or {}).get("message") or self.text.strip())

    @property
    def is_status(self) -> bool:
        """Whether the answer is a ``Status`` object (as opposed to a bare ``404 page not found``)."""
        return bool(self.body) and self.body.get("kind") == "Status"  # type: ignore[union-attr]


def resource_name(res: Resource) -> str:
    """``workloads.kueue.x-k8s.io``: how kubectl and the API server name a resource in messages."""
    return f"{res.plural}.{res.group}" if res.group else res.plural


def explain(exc: ApiStatus, res: Resource, name: str | None = None, namespace: str | None = None) -> CliError:
    """The one line for a refused request about ``res`` (and ``name``), in kubectl's words where it has some."""
    if exc.status == 404 and exc.is_status and exc.reason == "NotFound" and name is not None:
        where = f' in namespace "{namespace}"' if res.namespaced and namespace else ""
        return CliError(f'{resource_name(res)} "{name}" not found{where}')
    if exc.status == 404:
        return CliError(f'the server doesn\'t have a resource type "{res.plural}" ({res.api_version}): '
                        f"are Kueue's CRDs installed? {INSTALL_HINT}")
    return api_error(exc)


def api_error(exc: ApiStatus) -> CliError:
    """A refusal that says nothing more specific than the server's own Status."""
    if exc.status == 401:
        return CliError("Unauthorized: the API server rejected the kubeconfig's credentials")
    if exc.status == 403:
        return CliError(f"Forbidden: {exc.message}")
    reason = exc.reason or {409: "Conflict", 422: "Invalid", 500: "InternalError", 503: "ServiceUnavailable"}.get(
        exc.status, "Error")
    return CliError(f"{reason} ({exc.status}): {' '.join(exc.message.split()) or exc.path}")
