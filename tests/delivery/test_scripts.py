"""The repository's helper scripts (scripts/*.sh: soaks, stresses, measurements recorded under
benchmarks/results/) are shellcheck-clean, like the box's and provisioning's."""
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
def test_helper_scripts_are_shellcheck_clean():
    scripts = sorted(SCRIPTS.glob("*.sh"))
    assert scripts
    # -x: follow `. uml-series.sh` (its source= directive names it from the repository's root).
    r = subprocess.run(["shellcheck", "-x", *map(str, scripts)], capture_output=True, text=True,
                       cwd=SCRIPTS.parent)
    assert r.returncode == 0, r.stdout


def test_one_toolset_list_for_every_installer():
    """The experiments' tools are listed once, in vagrant/provision.sh's packages_list: the host's
    install-deps.sh and the box build install that list instead of naming the tools themselves."""
    repo = SCRIPTS.parent
    installers = [SCRIPTS / "install-deps.sh", repo / "vagrant" / "box" / "build.sh",
                  repo / "vagrant" / "box" / "customize.sh", repo / "Makefile", repo / ".ci" / "run"]
    for script in installers[:2]:
        assert 'provision.sh" --list-packages' in script.read_text(), f"{script} does not install provision.sh's list"
    tools = ("iperf3", "tshark", "tcpdump", "mptcpd", "ethtool", "iputils-ping", "libbpf-dev", "bpftool")
    code = {p.name: "\n".join(line.split("#")[0] for line in p.read_text().splitlines()) for p in installers}
    assert not {name: [t for t in tools if t in text] for name, text in code.items() if any(t in text for t in tools)}
