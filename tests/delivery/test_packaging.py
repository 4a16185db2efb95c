"""`pip install .` ships what the kit reads outside the package (see mptcplab.core.paths)."""

import tomllib

from mptcplab.core import paths


def test_every_lab_parameter_file_and_the_uml_config_are_data_files():
    shipped = tomllib.loads((paths.REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    files = {f for group in shipped.values() for f in group}
    wanted = {str(p.relative_to(paths.REPO_ROOT)) for p in paths.REPO_ROOT.glob("labs/*/experiment.toml")}
    assert wanted and wanted <= files and "vagrant/uml/mptcplab.config" in files
    patches = {str(p.relative_to(paths.REPO_ROOT)) for p in paths.REPO_ROOT.glob("vagrant/uml/*.patch")}
    assert patches and patches <= files  # an installed kit builds the same kernel (the patches are its cache key)
    for dest, group in shipped.items():  # each lands where paths.data() looks for it
        assert all(dest == "share/mptcplab/" + f.rsplit("/", 1)[0] for f in group), dest


def test_data_comes_from_the_checkout_when_there_is_one():
    assert paths.CHECKOUT is not None and paths.data("labs") == paths.CHECKOUT / "labs"
