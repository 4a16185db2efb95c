"""The UML kernel's HZ 250 variant (MPTCPLAB_UML_HZ, issue 37): its own patch and fragment, its own
cache key beside the HZ 100 build's, CONFIG_HZ read back from what was built into each run's manifest,
and a refusal, with the build command, when it is asked for but not built. The build is faked."""

import io
import shutil
import tarfile

import pytest

from mptcplab.core import state
from mptcplab.core.errors import EnvironmentProblem
from mptcplab.judge.provenance import build_of
from mptcplab.places import uml, uml_kernel
from mptcplab.run.results import platform_info


@pytest.fixture
def source(monkeypatch, tmp_path):
    """A distribution's kernel source of one empty folder, and a cache of the test's own."""
    tarball = tmp_path / "linux-source-6.12.tar.xz"
    with tarfile.open(tarball, "w:xz") as tar:
        folder = tarfile.TarInfo("linux-source-6.12")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder, io.BytesIO())
    monkeypatch.setattr(uml_kernel, "find_source", lambda: (tarball, "6.12.117-1~deb12u1"))
    monkeypatch.setattr(uml_kernel, "cache_root", lambda: tmp_path / "cache")
    monkeypatch.delenv("MPTCPLAB_UML_HZ", raising=False)
    return tarball


def test_the_variant_makes_hz_settable_and_sets_it_to_250():
    """UML's Kconfig has no CONFIG_HZ_250 (HZ is a fixed int there): the patch gives HZ a prompt, the
    fragment sets it; the HZ 100 build gets neither."""
    [patch] = uml_kernel.variant_patches("250")
    assert '-\tint\n+\tint "Timer frequency (HZ)"\n \tdefault 100' in patch.read_text()
    assert uml_kernel.variant_values("250") == {"HZ": "250"}
    assert uml_kernel.variant_patches("100") == [] and uml_kernel.variant_values("100") == {}


def test_each_hz_has_its_own_cache_key_and_the_hz_100_key_is_unchanged(source, monkeypatch, tmp_path):
    default = uml_kernel.kernel_dir()
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "100")
    assert uml_kernel.kernel_dir() == default
    assert "hz" not in default.name.split("deb12u1-", 1)[1]
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "250")
    hz250 = uml_kernel.kernel_dir()
    assert hz250.parent == default.parent and "-6.12.117-1_deb12u1-hz250-" in hz250.name
    # a manifest's build is named by its hash, and the two hashes differ
    assert build_of({"uml_kernel": hz250.name}) not in (build_of({"uml_kernel": default.name}), "UML build hz250")
    # editing the variant's fragment is a new HZ 250 kernel, and leaves the HZ 100 one alone
    edited = tmp_path / "hz250"
    shutil.copytree(uml_kernel.HZ_VARIANTS["250"], edited)
    (edited / "mptcplab.config").write_text("HZ=250\n# edited\n")
    monkeypatch.setitem(uml_kernel.HZ_VARIANTS, "250", edited)
    assert uml_kernel.kernel_dir() != hz250
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "100")
    assert uml_kernel.kernel_dir() == default
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "300")
    with pytest.raises(EnvironmentProblem, match="MPTCPLAB_UML_HZ='300': choose one of 100, 250"):
        uml_kernel.kernel_dir()


def fake_build(monkeypatch, tmp_path, hz_built):
    """build() with make faked: what was patched and how it was configured, recorded; the config it
    leaves says CONFIG_HZ=hz_built (what the kit's olddefconfig would have kept)."""
    monkeypatch.setattr(state.TRACKER, "path", tmp_path / "state.json")
    monkeypatch.setattr(uml_kernel, "_need_tools", lambda: None)
    did = {"patches": [], "extra": None}

    def run(argv, **_):
        if argv[0] == "patch":
            did["patches"].append(argv[-1].rsplit("/", 1)[-1])

    def configure(src, make, options, what, extra=()):
        did["extra"] = list(extra)
        (src / ".config").write_text(f"CONFIG_MPTCP=y\nCONFIG_HZ={hz_built}\n")

    def compile_(argv, *_):
        (tmp_path.glob("cache/build-*/linux-source-6.12").__next__() / "linux").write_text("a kernel")

    monkeypatch.setattr(uml_kernel.process, "run", run)
    monkeypatch.setattr(uml_kernel, "enable_options", configure)
    monkeypatch.setattr(uml_kernel, "make_with_progress", compile_)
    return did


def test_the_hz_250_build_applies_the_variant_and_keeps_its_config(source, monkeypatch, tmp_path):
    did = fake_build(monkeypatch, tmp_path, hz_built=250)
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "250")
    kernel = uml_kernel.build(quiet=True)
    assert did["patches"] == [p.name for p in uml_kernel.PATCHES] + ["uml-hz-prompt.patch"]
    assert did["extra"] == ["--set-val", "HZ", "250"]
    assert kernel.parent == uml_kernel.kernel_dir() and uml_kernel.config_hz(kernel.parent / "config") == 250


def test_a_config_that_kept_hz_100_is_refused_before_compiling(source, monkeypatch, tmp_path):
    """Without the patch, kconfig would set the prompt-less HZ back to 100: the build reads it back."""
    fake_build(monkeypatch, tmp_path, hz_built=100)
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "250")
    with pytest.raises(EnvironmentProblem, match="config has CONFIG_HZ=100, not the 250 asked for"):
        uml_kernel.build(quiet=True)
    assert not list((tmp_path / "cache").glob("*/linux"))


def test_the_hz_250_kernel_asked_for_but_not_built_is_refused_with_the_build_command(source, monkeypatch):
    def build(*_, **__):
        raise AssertionError("a run built a variant")

    monkeypatch.setattr(uml_kernel, "build", build)
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "250")
    said = ("MPTCPLAB_UML_HZ=250: the HZ 250 UML kernel is not built; build it with "
            "`MPTCPLAB_UML_HZ=250 mptcplab uml build`")
    ok, why = uml.available()
    assert not ok and why.startswith(said)
    with pytest.raises(EnvironmentProblem, match="build it with `MPTCPLAB_UML_HZ=250 mptcplab uml build`"):
        uml.run(["run", "lab1"], [], {})
    monkeypatch.delenv("MPTCPLAB_UML_HZ")  # the default kernel is still built on first use
    with pytest.raises(AssertionError, match="a run built a variant"):
        uml.ready()


def test_each_run_records_the_build_and_the_hz_read_from_its_config(source, monkeypatch):
    monkeypatch.setenv("MPTCPLAB_UML_HZ", "250")
    built = uml_kernel.kernel_dir()
    built.mkdir(parents=True)
    (built / "linux").write_text("a kernel")
    (built / "config").write_text("CONFIG_HZ_PERIODIC=y\nCONFIG_HZ=250\n")
    handed = {}
    monkeypatch.setattr(uml_kernel, "run", lambda argv, env: handed.update(env) or 0)
    assert uml.run(["run", "lab1"], [], {}) == 0
    for name in ("MPTCPLAB_UML_KERNEL", "MPTCPLAB_UML_KERNEL_HZ"):  # inside the guest, as its script exports them
        monkeypatch.setenv(name, handed[name])
    monkeypatch.setenv("MPTCPLAB_WHERE", "uml")
    facts = platform_info()
    assert facts["uml_kernel"] == built.name and facts["hz"] == 250
