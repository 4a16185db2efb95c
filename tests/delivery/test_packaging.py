"""`pip install .` ships what the kit reads outside the package (see mptcplab.core.paths)."""

import tomllib

from mptcplab.core import paths


def test_every_lab_parameter_file_is_package_data_and_the_uml_config_a_data_file():
    from mptcplab.run.lab import all_labs

    tool = tomllib.loads((paths.REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    # A lab is one package plus its guide: its parameters ship with the package's *.toml.
    params = [lab.params_file for lab in all_labs().values()]
    assert params and all(p.is_file() and p.is_relative_to(paths.PACKAGE) for p in params)
    assert "**/*.toml" in tool["package-data"]["mptcplab"]
    files = {f for group in tool["data-files"].values() for f in group}
    assert "vagrant/uml/mptcplab.config" in files
    patches = {str(p.relative_to(paths.REPO_ROOT)) for p in paths.REPO_ROOT.glob("vagrant/uml/*.patch")}
    variants = {str(p.relative_to(paths.REPO_ROOT)) for p in paths.REPO_ROOT.glob("vagrant/uml/*/*") if p.is_file()}
    # an installed kit builds the same kernels (the patches, and an HZ variant's files, are their cache keys)
    assert patches and patches | variants <= files
    for dest, group in tool["data-files"].items():  # each lands where paths.data() looks for it
        assert all(dest == "share/mptcplab/" + f.rsplit("/", 1)[0] for f in group), dest


def test_data_comes_from_the_checkout_when_there_is_one():
    assert paths.CHECKOUT is not None and paths.data("labs") == paths.CHECKOUT / "labs"
