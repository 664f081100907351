"""A worker's kubeconfig is refused for what upstream's validateKubeconfig refuses (the reason
InsecureKubeConfig), and accepted when flattened with inline credentials."""

from __future__ import annotations

import copy

import pytest

from pykueue.controller import multikueue_kubeconfig as kc

GOOD = {
    "apiVersion": "v1", "kind": "Config", "current-context": "w",
    "clusters": [{"name": "w", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": "Q0E="}}],
    "users": [{"name": "u", "user": {"client-certificate-data": "Qw==", "client-key-data": "Sw=="}}],
    "contexts": [{"name": "w", "context": {"cluster": "w", "user": "u"}}],
}


def _with(section: str, key: str, value: object) -> dict:
    doc = copy.deepcopy(GOOD)
    inner = "cluster" if section == "clusters" else "user"
    doc[section][0][inner][key] = value
    return doc


def test_a_flattened_kubeconfig_is_accepted() -> None:
    assert kc.problem(GOOD) is None
    assert kc.problem(_with("clusters", "server", "https://worker-1.example.com:6443")) is None


@pytest.mark.parametrize(("section", "key", "value", "why"), [
    ("users", "tokenFile", "/var/token", "tokenFile is not allowed"),
    ("clusters", "insecure-skip-tls-verify", True, "insecure TLS verification is not allowed for cluster w"),
    ("clusters", "certificate-authority", "/ca.crt", "certificate-authority file paths are not allowed"),
    ("clusters", "server", "", "server URL is required for cluster w"),
    ("clusters", "server", "https://bad_host:6443", "untrusted server endpoint"),
    ("users", "username", "admin", "basic auth is not allowed"),
    ("users", "exec", {"command": "get-token"}, "exec plugins are not allowed"),
    ("users", "auth-provider", {"name": "gcp"}, "auth providers are not allowed"),
])
def test_refused(section: str, key: str, value: object, why: str) -> None:
    assert why in (kc.problem(_with(section, key, value)) or "")


def test_unreadable_documents() -> None:
    with pytest.raises(kc.KubeconfigError, match="failed to parse kubeconfig"):
        kc.parse(b"[: not yaml")
    with pytest.raises(kc.KubeconfigError, match="not a mapping"):
        kc.parse(b"- a list")

