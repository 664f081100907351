"""The Dockerfile, checked statically: there is no container runtime on the machines that run these
tests, so the image is not built here. What is checked is what makes it safe to run: a pinned slim
base, a non-root user, the package installed with pip without extras, the `pykueue` entrypoint."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.packaging.dockerfile import instructions

REPO = Path(__file__).resolve().parents[2]
CHART_VALUES = REPO / "charts" / "pykueue" / "values.yaml"


def build_args() -> dict[str, str]:
    args = {}
    for word, rest in instructions():
        if word == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args[name] = value
    return args


def base_images() -> list[str]:
    args = build_args()
    images = []
    for word, rest in instructions():
        if word == "FROM":
            image = rest.split()[0]
            images.append(re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image))
    return images


def test_base_image_is_slim_python_pinned_to_a_patch_release_and_a_digest() -> None:
    images = base_images()
    assert images, "no FROM"
    for image in images:
        assert "latest" not in image, image
        # the digest is required: a tag may be pushed again, a digest names one image
        match = re.fullmatch(r"python:(\d+)\.(\d+)\.(\d+)-slim-(\w+)(@sha256:[0-9a-f]{64})", image)
        assert match, f"{image}: not python:X.Y.Z-slim-<debian release>"
        assert (int(match.group(1)), int(match.group(2))) >= (3, 11)  # requires-python = ">=3.11"


def test_runs_as_non_root_user() -> None:
    users = [rest for word, rest in instructions() if word == "USER"]
    assert users, "no USER: the image would run as root"
    final = users[-1].split(":")
    assert final[0] not in ("root", "0") and final[0].isdigit(), users[-1]  # numeric: runAsNonRoot can check it
    assert int(final[0]) == 65532 and (len(final) == 1 or int(final[1]) == 65532)
    values = yaml.safe_load(CHART_VALUES.read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(final[0])  # the chart runs the pod as the image's user
    # the USER comes after the last FROM, so the final stage is the one it applies to
    kinds = [word for word, _ in instructions()]
    assert len(kinds) - 1 - kinds[::-1].index("USER") > len(kinds) - 1 - kinds[::-1].index("FROM")


def test_installs_the_package_with_pip_and_no_extras() -> None:
    runs = " ".join(rest for word, rest in instructions() if word == "RUN")
    installs = [cmd for cmd in re.split(r"&&|;", runs) if "pip install" in cmd]
    assert installs, "no pip install"
    for cmd in installs:
        words = shlex.split(cmd)
        targets = [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
        assert targets == ["."], cmd  # the package itself: no [test] or [report] extras, nothing else
        assert "--pre" not in words and "-e" not in words and "--editable" not in words, cmd


def test_entrypoint_and_command() -> None:
    found = {word: rest for word, rest in instructions() if word in ("ENTRYPOINT", "CMD")}
    assert found.get("ENTRYPOINT") == '["pykueue"]'  # exec form: signals reach the controller
    assert found.get("CMD") == '["controller"]'
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert "pykueue" in scripts


def test_build_context_is_only_the_package() -> None:
    """The build copies pyproject.toml, setup.py (the hook that compiles the engine) and pykueue/ only,
    and .dockerignore keeps the rest (virtualenvs, test clusters, caches) out of the context."""
    copies = [rest.split() for word, rest in instructions() if word == "COPY" and "--from" not in rest]
    sources = {src for args in copies for src in args[:-1]}
    assert sources == {"pyproject.toml", "setup.py", "pykueue"}, sources
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*" and {"!pyproject.toml", "!setup.py", "!pykueue/"} <= set(ignore)


@pytest.mark.parametrize("word", ["ADD", "EXPOSE", "VOLUME", "HEALTHCHECK"])
def test_no_instructions_the_controller_does_not_need(word: str) -> None:
    assert word not in {w for w, _ in instructions()}


def test_the_build_stage_can_compile_the_engine_and_checks_it_did() -> None:
    """setup.py's hook compiles when a C compiler is there: the build stage installs one (the final stage
    copies only the virtualenv), and the build fails if the installed package is not the compiled one."""
    froms = [i for i, (word, _) in enumerate(instructions()) if word == "FROM"]
    assert len(froms) == 2 and instructions()[froms[0]][1].endswith(" AS build")
    build_stage = " ".join(rest for word, rest in instructions()[froms[0]:froms[1]] if word == "RUN")
    assert "apt-get install" in build_stage and "gcc" in build_stage.split()
    assert '"(compiled engine)"' in build_stage


def test_the_final_stage_removes_the_shell_package_managers_and_pip() -> None:
    """What the image built from Debian's packages takes out (``image.STRIPPED``) the Dockerfile's final
    stage removes too, with pip (the base's and the virtualenv's), in an exec-form RUN (the shell is
    among what goes) before the unprivileged USER (root may remove them)."""
    import json

    from pykueue.devcluster import image

    words = [word for word, _ in instructions()]
    final = len(words) - 1 - words[::-1].index("FROM")
    runs = [(i, rest) for i, (word, rest) in enumerate(instructions()) if word == "RUN" and i > final]
    (index, rest), = runs
    argv = json.loads(rest)
    assert argv[:2] == ["/usr/bin/rm", "-rf"]
    removed = set(argv[2:])
    assert {"/" + p for p in image.STRIPPED} <= removed
    assert {"/usr/local/bin/pip", "/usr/local/lib/python3.11/site-packages/pip", "/opt/pykueue/bin/pip",
            "/opt/pykueue/lib/python3.11/site-packages/pip"} <= removed
    assert index < words.index("USER", final)
