"""Delegated authentication without a cluster: a fake API server answering TokenReview and
SubjectAccessReview (and counting its calls), a test clock, and the client CAs of an
extension-apiserver-authentication ConfigMap made here."""

from __future__ import annotations

import datetime
from typing import Any

from pykueue.controller.serving import auth
from pykueue.kube.client import ApiError
from tests.certs import make_cert, pem

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
FRONT_CA, CLIENT_CA = make_cert("front-proxy-ca", at=NOW), make_cert("client-ca", at=NOW)
CONFIG_DATA = {
    "client-ca-file": pem(CLIENT_CA[0]),
    "requestheader-client-ca-file": pem(FRONT_CA[0]),
    "requestheader-allowed-names": '["front-proxy-client"]',
    "requestheader-username-headers": '["X-Remote-User"]',
    "requestheader-group-headers": '["X-Remote-Group"]',
    "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
}


class FakeApi:
    """TokenReview: ``tokens`` maps a token to a username. SubjectAccessReview: allowed when
    (user, resource-or-path) is in ``grants``. ``fail`` makes every call an API error."""

    def __init__(self) -> None:
        self.tokens = {"alice-token": "alice", "bob-token": "bob"}
        self.grants: set[tuple[str, str]] = set()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    async def __call__(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((path, body))
        if self.fail:
            raise ApiError(503, {"reason": "ServiceUnavailable"}, "POST", path)
        spec = body["spec"]
        if path == auth.TOKEN_REVIEWS:
            user = self.tokens.get(spec["token"])
            return {"status": {"authenticated": True, "user": {"username": user, "groups": ["system:authenticated"]}}
                    if user else {"authenticated": False}}
        attrs = spec.get("resourceAttributes") or {}
        what = spec["nonResourceAttributes"]["path"] if "nonResourceAttributes" in spec else \
            f"{attrs.get('namespace', '')}/{attrs['resource']}/{attrs.get('subresource', '')}"
        return {"status": {"allowed": (spec["user"], what) in self.grants}}

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.calls if p == path)


class Clock:
    """A monotonic clock the test moves by hand (``t``, in seconds)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def delegated(api: FakeApi, clock: Clock, **kw: Any) -> auth.Delegated:
    """Delegated auth answered by ``api``, on ``clock``, whose wall time is NOW, with CONFIG_DATA's CAs."""
    d = auth.Delegated(None, reviewer=api, clock=clock, now=lambda: NOW, **kw)
    d.set_config(auth.AuthConfig.from_data(CONFIG_DATA))
    return d
