"""What `pykueue validate` says about a manifest: the webhooks' refusals must say the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def validate_lines(tmp_path: Path, manifest: dict[str, Any]) -> list[str]:
    """What `pykueue validate` prints for the object, each line without its file and object prefix."""
    path = tmp_path / f"{manifest['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = subprocess.run([sys.executable, "-m", "pykueue.cli", "validate", str(path)], capture_output=True,
                            text=True, cwd=REPO)
    assert result.returncode == 2, result
    prefix = f"{manifest['kind']} {manifest['metadata']['name']}: "
    return [line.split(prefix, 1)[1] for line in result.stderr.splitlines() if prefix in line]
