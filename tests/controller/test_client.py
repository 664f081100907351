"""The client resolves the environment's proxy once (not per request) and keeps NO_PROXY's exemptions."""

from __future__ import annotations

import pytest

from pykueue.kube.client import _env_proxy


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
                 "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_no_proxy_in_the_environment() -> None:
    assert _env_proxy("https://10.0.0.1:6443") is None


def test_https_proxy_is_used_for_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert _env_proxy("https://api.example.com:6443") == "http://proxy.corp:3128"


def test_no_proxy_exempts_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.cluster.local,api.example.com")
    assert _env_proxy("https://api.example.com:6443") is None
    assert _env_proxy("https://kubernetes.default.svc.cluster.local") is None
    assert _env_proxy("https://other.example.com") == "http://proxy.corp:3128"


def test_an_http_server_takes_the_http_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://plain.corp:8080")
    assert _env_proxy("http://api.example.com:8080") == "http://plain.corp:8080"
    assert _env_proxy("https://api.example.com:6443") is None
