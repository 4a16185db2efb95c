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
