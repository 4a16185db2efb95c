"""The box build's fast checks (the build itself takes ~30 min and is an acceptance run, see
vagrant/box/acceptance/): its scripts are shellcheck-clean and refuse bad arguments clearly, the
metadata.json it writes is what Vagrant reads (schema, checksums, URLs), the OVF is well formed,
and its package list resolves against Debian 13's archive (mmdebstrap --simulate, no download).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
BOX = REPO / "vagrant" / "box"
SCHEMA = json.loads((BOX / "metadata.schema.json").read_text())


def _metadata(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BOX / "metadata.py"), *args], capture_output=True, text=True)


@pytest.fixture
def boxes(tmp_path):
    for name in ("mptcplab-amd64-libvirt.box", "mptcplab-arm64-libvirt.box", "mptcplab-amd64-virtualbox.box"):
        (tmp_path / name).write_bytes(name.encode())  # stand-ins: only names and checksums matter here
    (tmp_path / "unrelated.box").write_bytes(b"x")
    return tmp_path


def test_metadata_is_what_vagrant_reads(boxes):
    r = _metadata("write", "--dir", str(boxes), "--version", "2026.11.23")
    assert r.returncode == 0, r.stderr
    meta = json.loads((boxes / "metadata.json").read_text())
    jsonschema.validate(meta, SCHEMA)
    providers = meta["versions"][0]["providers"]
    assert [(p["name"], p["architecture"]) for p in providers] == [
        ("libvirt", "amd64"), ("libvirt", "arm64"), ("virtualbox", "amd64")]  # amd64 first: Vagrant < 2.4 takes it
    for p in providers:
        name = p["url"].rsplit("/", 1)[1]
        assert p["checksum"] == hashlib.sha256(name.encode()).hexdigest()
        assert p["url"] == (boxes / name).resolve().as_uri()  # absolute: Vagrant resolves no relative URL


def test_rebase_points_urls_at_the_host_and_verify_catches_a_changed_box(boxes):
    _metadata("write", "--dir", str(boxes), "--version", "1.0")
    assert _metadata("rebase", "--dir", str(boxes), "--base-url", "https://boxes.example.edu/mptcplab").returncode == 0
    meta = json.loads((boxes / "metadata.json").read_text())
    jsonschema.validate(meta, SCHEMA)
    assert {p["url"] for p in meta["versions"][0]["providers"]} == {
        f"https://boxes.example.edu/mptcplab/mptcplab-{a}-{p}.box"
        for a, p in (("amd64", "libvirt"), ("arm64", "libvirt"), ("amd64", "virtualbox"))}
    assert _metadata("verify", "--dir", str(boxes)).returncode == 0
    (boxes / "mptcplab-amd64-libvirt.box").write_bytes(b"tampered")
    r = _metadata("verify", "--dir", str(boxes))
    assert r.returncode != 0 and "mptcplab-amd64-libvirt.box" in r.stderr


def test_metadata_refuses_a_version_vagrant_cannot_compare(boxes):
    r = _metadata("write", "--dir", str(boxes), "--version", "v1-beta")
    assert r.returncode != 0 and "--version 'v1-beta'" in r.stderr


def test_schema_rejects_a_missing_checksum():
    bad = {"name": "mptcplab/debian-13", "versions": [{"version": "1", "providers": [
        {"name": "libvirt", "url": "https://x/mptcplab-amd64-libvirt.box", "checksum_type": "sha256"}]}]}
    with pytest.raises(jsonschema.ValidationError, match="checksum"):
        jsonschema.validate(bad, SCHEMA)


def test_ovf_is_well_formed_and_names_the_disk_build_writes():
    ns = {"ovf": "http://schemas.dmtf.org/ovf/envelope/1"}
    root = ET.parse(BOX / "box.ovf").getroot()
    (ref,) = root.findall("ovf:References/ovf:File", ns)
    assert ref.get(f"{{{ns['ovf']}}}href") == "mptcplab-disk001.vmdk"
    build = (BOX / "build.sh").read_text()
    assert "mptcplab-disk001.vmdk" in build and "@DISK_BYTES@" in build and "@FILE_BYTES@" in build


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
def test_box_scripts_are_shellcheck_clean():
    r = subprocess.run(["shellcheck", *map(str, sorted(BOX.glob("**/*.sh")))], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("args,message", [
    (["--arch", "riscv64"], "--arch riscv64: choose amd64 or arm64"),
    (["--stage", "disk"], "--stage disk: choose rootfs, image, boxes or all"),
    (["--version", "latest"], "--version latest: Vagrant wants digits and dots"),
])
def test_build_refuses_bad_arguments_by_name(args, message):
    r = subprocess.run(["bash", str(BOX / "build.sh"), *args], capture_output=True, text=True)
    assert r.returncode != 0 and message in r.stderr


@pytest.mark.parametrize("args,message", [
    (["--arch", "riscv64"], "--arch riscv64: choose amd64 or arm64"),
    (["--as", "hyperv"], "--as hyperv: choose libvirt or virtualbox"),
    (["--speed", "9"], "unknown argument --speed"),
])
def test_boot_disk_refuses_bad_arguments_by_name(tmp_path, args, message):
    disk = tmp_path / "disk.qcow2"
    disk.write_bytes(b"")
    r = subprocess.run(["bash", str(BOX / "acceptance" / "boot-disk.sh"), str(disk), *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and message in r.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mmdebstrap"),
                    reason="needs root and mmdebstrap (apt-get install mmdebstrap)")
@pytest.mark.slow  # mmdebstrap resolves the whole package list
def test_package_list_resolves_against_debian_13():
    """Every package the box installs (base + provision.sh's lab list) exists in trixie with its
    dependencies: `mmdebstrap --simulate` downloads the package lists only (1-3 min), and fails
    with apt's "Unable to locate package" on a name trixie does not have."""
    r = subprocess.run(["bash", str(BOX / "build.sh"), "--simulate"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and "simulate installing remaining packages" in r.stderr, r.stderr[-3000:]
