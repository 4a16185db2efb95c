"""The Lima door (lima/mptcplab.yaml) is the Vagrant VM's machine: the checkout at /vagrant, the same
provisioning script, JupyterLab's port; `limactl validate` accepts it where limactl is installed."""

import os
import shutil
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "lima" / "mptcplab.yaml"


def test_the_template_mounts_the_checkout_provisions_and_forwards_as_vagrant_does():
    t = yaml.safe_load(TEMPLATE.read_text())
    vagrantfile = (ROOT / "Vagrantfile").read_text()
    assert {i["arch"] for i in t["images"]} == {"aarch64", "x86_64"}
    assert "vmType" not in t  # Lima's own choice: vz on macOS 13.5+, QEMU elsewhere
    (mount,) = t["mounts"]
    assert mount["mountPoint"] == "/vagrant" and mount["writable"] and 'synced_folder ".", "/vagrant"' in vagrantfile
    (provision,) = t["provision"]
    # The Vagrantfile's script, every step of it: its kernel step takes the kit's kernel from the
    # checkout's build/box/kernel-ARCH/ (test_provision_kernel.py), where the box build leaves it.
    assert 'path: "vagrant/provision.sh"' in vagrantfile
    assert provision["mode"] == "system" and re.search(r"bash /vagrant/vagrant/provision\.sh\n", provision["script"])
    assert "OUT=$repo/build/box" in (ROOT / "vagrant" / "box" / "build.sh").read_text()
    port = re.search(r"PORT=\$\{MPTCPLAB_JUPYTER_PORT:-(\d+)\}", (ROOT / "vagrant" / "provision.sh").read_text())
    assert t["portForwards"] == [{"guestPort": int(port.group(1)), "hostPort": int(port.group(1))}]
    assert "mptcplab-jupyter.service" in t["probes"][0]["script"]
    assert (ROOT / "site" / "setup" / "lima.md").exists() and "setup/lima.md" in (ROOT / "mkdocs.yml").read_text()


@pytest.mark.skipif(shutil.which("limactl") is None, reason="limactl is not installed (site/setup/lima.md)")
def test_limactl_validates_it_and_fills_in_what_the_vagrant_vm_has():
    # limactl refuses root: as nobody, with a home of its own in /tmp (pytest's own tmp_path is private to root)
    home = Path(tempfile.mkdtemp(prefix="mlab-lima-"))
    try:
        copy = home / "mptcplab.yaml"
        shutil.copy(TEMPLATE, copy)
        (home / "mptcplab").mkdir()  # the checkout where the template looks for it (param SRC)
        argv = ["limactl", "validate", "--fill", str(copy)]
        if os.geteuid() == 0:
            for path in (home, copy, home / "mptcplab"):
                os.chown(path, 65534, 65534)
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", shutil.which("limactl"), *argv[1:]]
        out = subprocess.run(argv, env={**os.environ, "HOME": str(home)}, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(home)
    assert out.returncode == 0, out.stderr
    assert "level=warning" not in out.stderr, out.stderr
    filled = yaml.safe_load(out.stdout)  # what Lima makes of it on this host
    (mount,) = filled["mounts"]
    assert mount["location"] == str(home / "mptcplab") and mount["mountPoint"] == "/vagrant" and mount["writable"]
    (forward,) = filled["portForwards"]
    assert (forward["hostIP"], forward["hostPort"], forward["guestPort"]) == ("127.0.0.1", 8888, 8888)
    (provision,) = filled["provision"]
    user = filled["user"]["name"]
    assert f'MPTCPLAB_USER="{user}" bash /vagrant/vagrant/provision.sh' in provision["script"]
    assert not filled["containerd"]["system"] and not filled["containerd"]["user"]
