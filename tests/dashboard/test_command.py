"""`pykueue dashboard`'s command line: bad input is one line and exit 2, never a traceback."""

from __future__ import annotations

import pytest

from pykueue.cli import main
from pykueue.dashboard.command import parse_listen


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:8090", ("127.0.0.1", 8090)), ("[::1]:0", ("::1", 0)), (":9000", ("127.0.0.1", 9000)),
    ("0.0.0.0:80", ("0.0.0.0", 80)),
])
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


@pytest.mark.parametrize(("argv", "message"), [
    (["--listen", "nonsense"], "pykueue dashboard: error: --listen 'nonsense': expected HOST:PORT, e.g. 127.0.0.1:8090"),
    (["--listen", "h:70000"], "pykueue dashboard: error: --listen 'h:70000': expected HOST:PORT"),
    (["--kubeconfig", "/nonexistent/kubeconfig"],
     "pykueue dashboard: error: kubeconfig /nonexistent/kubeconfig: no such file"),
])
def test_bad_arguments_are_one_line(argv: list[str], message: str, capsys) -> None:
    assert main(["dashboard", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_a_bad_configuration_is_reported_as_the_controller_reports_it(tmp_path, capsys) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfairSharing: {enable: maybe}\n")
    assert main(["dashboard", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "fairSharing.enable" in err and "Traceback" not in err


def test_an_unreachable_api_server_is_one_line_before_anything_is_served(tmp_path, capsys) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
    assert main(["dashboard", "--kubeconfig", str(kubeconfig), "--listen", "127.0.0.1:0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pykueue dashboard: error: cannot connect to the API server at https://127.0.0.1:{port}: ")
    assert err.count("\n") == 1 and "serving" not in err
