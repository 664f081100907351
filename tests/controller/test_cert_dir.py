"""The webhook and metrics certificates on disk (`pykueue.controller.serving.certs`): a directory
private to the process, files written without following links, the CA key always its certificate's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pykueue.controller.serving import certs

NAMES = ("svc.ns.svc", *certs.LOCAL_NAMES)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_directory_is_made_private_and_never_a_link(tmp_path: Path) -> None:
    made = certs.private_dir(tmp_path / "a" / "certs")
    assert _mode(made) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    certs.private_dir(loose)
    assert _mode(loose) == 0o700  # an existing directory of ours is closed
    (tmp_path / "link").symlink_to(loose)
    with pytest.raises(certs.CertDirError, match="not a directory"):
        certs.private_dir(tmp_path / "link")
    (tmp_path / "file").write_text("x")
    with pytest.raises(certs.CertDirError, match="not a directory"):
        certs.private_dir(tmp_path / "file")


def test_files_are_written_afresh_without_following_links(tmp_path: Path) -> None:
    directory = certs.private_dir(tmp_path / "certs")
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    (directory / "tls.key").symlink_to(outside)  # planted: the key must not land in it
    bundle = certs.renew(None, NAMES)
    certs.write_dir(directory, bundle)
    assert outside.read_bytes() == b"keep"
    assert not (directory / "tls.key").is_symlink()
    assert certs.read_dir(directory) == bundle
    assert sorted(p.name for p in directory.iterdir()) == sorted(certs.FILES)  # no temporary left
    assert {p.name: _mode(p) for p in directory.iterdir()} == dict.fromkeys(certs.FILES, 0o600)


def test_without_the_ca_key_a_stale_one_is_removed(tmp_path: Path) -> None:
    old, new = certs.renew(None, NAMES), certs.renew(None, NAMES)
    certs.write_dir(tmp_path, old)
    certs.write_dir(tmp_path, new, with_ca_key=False)  # the Secret keeps the key: none on disk
    assert not (tmp_path / "ca.key").exists()
    assert (tmp_path / "ca.crt").read_bytes() == new.ca_cert


def test_a_ca_key_that_is_not_the_certificates_forces_a_new_ca() -> None:
    bundle, other = certs.renew(None, NAMES), certs.renew(None, NAMES)
    mismatched = certs.Bundle(bundle.ca_cert, other.ca_key, bundle.cert, bundle.key)
    assert certs.renewal_reason(mismatched, NAMES) == "the CA key is not the CA certificate's"
    renewed = certs.renew(mismatched, NAMES)
    assert renewed.ca_cert != bundle.ca_cert and certs.renewal_reason(renewed, NAMES) is None
    wrong_leaf_key = certs.Bundle(bundle.ca_cert, bundle.ca_key, bundle.cert, other.key)
    assert certs.renewal_reason(wrong_leaf_key, NAMES) == "the serving key is not the serving certificate's"


def test_default_parent_is_never_shared_tmp_outside_a_pod(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    assert certs.default_parent({"XDG_RUNTIME_DIR": str(runtime)}, in_pod=False) == runtime / "pykueue"
    assert certs.default_parent({"XDG_CACHE_HOME": str(tmp_path / "c")}, in_pod=False) == tmp_path / "c" / "pykueue" / "certs"
    assert certs.default_parent({}, in_pod=True) == Path("/tmp")  # the pod's own emptyDir
    first = certs.fresh_dir(tmp_path / "p")
    second = certs.fresh_dir(tmp_path / "p")
    assert first != second and _mode(first) == _mode(second) == _mode(tmp_path / "p") == 0o700


_AS_POD_USER = """
import os, stat, sys
from pathlib import Path
from pykueue.controller.serving import certs
bundle = certs.renew(None, ("svc.ns.svc",))  # as root: the interpreter's files may be closed to 65532
os.setgroups([]); os.setgid(65532); os.setuid(65532)
parent = Path(sys.argv[1])
made = certs.fresh_dir(parent)
certs.write_dir(made, bundle)
st = os.lstat(made)
print(made.parent == parent, st.st_uid, oct(stat.S_IMODE(st.st_mode)), oct(stat.S_IMODE(os.lstat(parent).st_mode)),
      certs.read_dir(made) == bundle)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming uid 65532 needs root")
@pytest.mark.parametrize("mode", [0o1777, 0o777], ids=["tmpfs-1777", "disk-0777"])
def test_the_pods_root_owned_shared_tmp_takes_a_private_subdirectory(mode: int) -> None:
    """The chart's pod runs as uid 65532 with /tmp an emptyDir: root's, world-writable (tmpfs: 1777;
    on the node's disk the kubelet makes it 0777). The controller must not try to own or close it (it
    cannot) but make its own 0700 directory inside, as upstream's certificate writer does."""
    import shutil
    import subprocess
    import sys
    import tempfile

    outer = Path(tempfile.mkdtemp(prefix="pykueue-pod-tmp-", dir="/dev/shm"))  # pytest's tmp_path is 0700
    try:
        os.chmod(outer, 0o755)  # uid 65532 must reach the directory below
        shared = outer / "tmp"
        shared.mkdir()
        os.chmod(shared, mode)
        result = subprocess.run([sys.executable, "-c", _AS_POD_USER, str(shared)], capture_output=True,
                                text=True, cwd="/", timeout=60,
                                env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    finally:
        shutil.rmtree(outer)
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1:]
    assert result.stdout.split() == ["True", "65532", "0o700", oct(mode), "True"]
