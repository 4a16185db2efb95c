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
    for name in ("mptcplab-amd64-libvirt.box", "mptcplab-arm64-libvirt.box", "mptcplab-amd64-virtualbox.box",
                 "mptcplab-arm64-virtualbox.box"):
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
        ("libvirt", "amd64"), ("libvirt", "arm64"), ("virtualbox", "amd64"), ("virtualbox", "arm64")]  # amd64 first: Vagrant < 2.4 takes it
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
        for a, p in (("amd64", "libvirt"), ("arm64", "libvirt"), ("amd64", "virtualbox"), ("arm64", "virtualbox"))}
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


VBOX = "http://www.virtualbox.org/ovf/machine"
OVF1 = "http://schemas.dmtf.org/ovf/envelope/1"
RASD = "http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_ResourceAllocationSettingData"


def _in_ovf(path: str) -> str:
    """An ElementTree path in the OVF's default namespace, which vbox:Machine's children are in too
    (as in VirtualBox's own exports; its reader matches them by local name)."""
    return "/".join(f"{{{OVF1}}}{step}" for step in path.split("/"))


def _arm64_machine(root: ET.Element) -> ET.Element:
    """The vbox:Machine of an arm64 OVF, checked for what makes VirtualBox import an ARM machine
    (without that section, Appliance::i_importMachineGeneric makes every import an x86 one)."""
    (machine,) = root.iter(f"{{{VBOX}}}Machine")
    assert machine.get("version", "").startswith("1.20-")  # the settings format with <Platform> (7.1+)
    assert machine.get("OSType") == "Debian_arm64"
    (platform,) = machine.findall(_in_ovf("Platform"))
    assert platform.get("architecture") == "ARM"
    assert platform.find(_in_ovf("Chipset")).get("type") == "ARMv8Virtual"
    assert machine.find(_in_ovf("Hardware/Firmware")).get("type") == "EFI"  # an arm64 VM boots only through UEFI
    return machine


def test_arm64_ovf_describes_an_arm_machine_whose_disk_and_controller_match():
    root = ET.parse(BOX / "box-arm64.ovf").getroot()
    machine = _arm64_machine(root)
    (disk,) = root.findall(f"{{{OVF1}}}DiskSection/{{{OVF1}}}Disk")
    (image,) = machine.findall(_in_ovf("Hardware/StorageControllers/StorageController/AttachedDevice/Image"))
    assert disk.get(f"{{{VBOX}}}uuid") == "@DISK_UUID@" and image.get("uuid") == "{@DISK_UUID@}"  # one UUID, both places
    # The OVF's own controller is the vbox:Machine's (VirtualBox reads both: the OVF for its disk list).
    subtypes = [i.findtext(f"{{{RASD}}}ResourceSubType") for i in root.iter(f"{{{OVF1}}}Item")]
    assert "VirtioSCSI" in subtypes and "virtio" in subtypes
    assert machine.find(_in_ovf("Hardware/StorageControllers/StorageController")).get("type") == "VirtioSCSI"
    assert machine.find(_in_ovf("Hardware/Network/Adapter")).get("type") == "virtio"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mmdebstrap"),
                    reason="build.sh runs as root with mmdebstrap (apt-get install mmdebstrap)")
def test_boxes_stage_writes_an_arm64_virtualbox_box(tmp_path):
    """build.sh --stage boxes --arch arm64 on a stand-in disk: both arm64 boxes, the VirtualBox one's
    OVF with every placeholder filled (one fresh disk UUID in both places), listed in metadata.json.
    qemu-img is faked (it only converts the disk, which this test does not look at)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "qemu-img").write_text('#!/bin/sh\nfor a; do last=$a; done\necho vmdk >"$last"\n')
    (fake / "qemu-img").chmod(0o755)
    out = tmp_path / "box"
    out.mkdir()
    (out / "disk-arm64.qcow2").write_bytes(b"qcow2 stand-in")
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "MPTCPLAB_BOX_DISK_GB": "20"}
    r = subprocess.run(["bash", str(BOX / "build.sh"), "--arch", "arm64", "--stage", "boxes", "--out", str(out),
                        "--version", "2026.11.25"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    extract = tmp_path / "x"
    extract.mkdir()
    subprocess.run(["tar", "-xf", str(out / "mptcplab-arm64-virtualbox.box"), "-C", str(extract)], check=True)
    assert sorted(p.name for p in extract.iterdir()) == ["Vagrantfile", "box.ovf", "metadata.json", "mptcplab-disk001.vmdk"]
    text = (extract / "box.ovf").read_text()
    assert "@" not in text.split("-->", 1)[1]  # every placeholder filled (the comment names them)
    root = ET.fromstring(text)
    machine = _arm64_machine(root)
    (disk,) = root.findall(f"{{{OVF1}}}DiskSection/{{{OVF1}}}Disk")
    assert disk.get(f"{{{OVF1}}}capacity") == str(20 * 1024**3)
    image = machine.find(_in_ovf("Hardware/StorageControllers/StorageController/AttachedDevice/Image"))
    assert image.get("uuid") == "{" + disk.get(f"{{{VBOX}}}uuid") + "}"
    assert json.loads((extract / "metadata.json").read_text()) == {"provider": "virtualbox", "architecture": "arm64"}
    assert '"arm64" == "arm64"' in (extract / "Vagrantfile").read_text()
    meta = json.loads((out / "metadata.json").read_text())
    assert [(p["name"], p["architecture"]) for p in meta["versions"][0]["providers"]] == [
        ("libvirt", "arm64"), ("virtualbox", "arm64")]


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
def test_box_scripts_are_shellcheck_clean():
    r = subprocess.run(["shellcheck", *map(str, sorted(BOX.glob("**/*.sh")))], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("args,message", [
    (["--arch", "riscv64"], "--arch riscv64: choose amd64 or arm64"),
    (["--stage", "disk"], "--stage disk: choose kernel, rootfs, image, boxes or all"),
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
