"""The guest kernel's BTF read from its image on the host (image_btf), made-up images."""

import gzip
import hashlib
import lzma
import os
import shutil
import struct
from pathlib import Path

import pytest

from mptcplab.core.errors import EnvironmentProblem
from mptcplab.labs.lab2.cc import image_btf, loader

HOST_BTF = Path("/sys/kernel/btf/vmlinux")


def elf(sections: dict[str, bytes]) -> bytes:
    """A 64-bit little-endian ELF holding only these sections (and its section-name table)."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    body, placed = b"", []
    for data in [*sections.values(), names]:
        placed.append((0x40 + len(body), len(data)))
        body += data
    shoff = 0x40 + len(body)
    header = bytearray(0x40)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, len(placed) + 1, len(placed))
    shdrs = bytes(64)  # the null section
    for name, (off, size) in zip([*sections, ".shstrtab"], placed):
        shdrs += struct.pack("<IIQQQQIIQQ", names.index(name.encode() + b"\0"), 1, 0, 0, off, size, 0, 0, 1, 0)
    return bytes(header) + body + shdrs


def bzimage(compressed: bytes, setup_sects: int = 3, offset: int = 0x100) -> bytes:
    """An x86 bzImage's layout: setup header (HdrS, protocol 2.15), then the protected-mode code
    with the payload at payload_offset, the decompressed size appended (size_append)."""
    setup = bytearray(((setup_sects or 4) + 1) * 512)
    setup[0x1F1] = setup_sects
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, 0x20F)
    payload = compressed + struct.pack("<I", 123456)
    struct.pack_into("<II", setup, 0x248, offset, len(payload))
    return bytes(setup) + b"\xcc" * offset + payload + b"\xcc" * 64


@pytest.mark.parametrize("compress", [lzma.compress, gzip.compress], ids=["xz", "gzip"])
def test_the_btf_section_comes_out_of_a_compressed_image(tmp_path, compress):
    btf = b"\x9f\xeb\x01\x00" + os.urandom(300)  # BTF's magic, then anything
    image = tmp_path / "vmlinuz-9.9.9"
    image.write_bytes(bzimage(compress(elf({".text": b"\x90" * 40, ".BTF": btf, ".data": b"x"}))))
    assert image_btf.btf(image) == btf


@pytest.mark.skipif(shutil.which("zstd") is None, reason="needs the zstd tool")
def test_a_zstd_image_with_its_appended_size_decompresses(tmp_path):
    import subprocess
    btf = b"\x9f\xeb\x01\x00" + os.urandom(300)
    frame = subprocess.run(["zstd", "-c"], input=elf({".BTF": btf}), capture_output=True, check=True).stdout
    image = tmp_path / "vmlinuz-9.9.9"
    image.write_bytes(bzimage(frame, setup_sects=0))  # 0 setup sectors means 4 (boot.rst)
    assert image_btf.btf(image) == btf


def test_what_is_not_a_bzimage_or_has_no_btf_is_refused(tmp_path):
    with pytest.raises(EnvironmentProblem, match="bzImage"):
        image_btf.payload(b"\0" * 4096)
    with pytest.raises(EnvironmentProblem, match="no .BTF section"):
        image_btf.elf_section(elf({".text": b"\x90"}), ".BTF")
    with pytest.raises(EnvironmentProblem, match="unknown compression"):
        image_btf.decompress(b"\0\0\0\0rest")


@pytest.mark.skipif(not (shutil.which("bpftool") and HOST_BTF.exists()), reason="needs bpftool and kernel BTF")
def test_the_guest_kernels_folder_is_the_one_its_guest_computes(tmp_path, monkeypatch):
    """The folder is named as a guest booted from the image names its own (loader.kernel_dir:
    release and the hash of /sys/kernel/btf/vmlinux); this host's BTF stands in for the image's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    btf = HOST_BTF.read_bytes()
    image = tmp_path / "vmlinuz-9.9.9-guest"
    image.write_bytes(bzimage(lzma.compress(elf({".BTF": btf}), preset=0)))
    kdir = loader.guest_kernel_dir(image)
    assert kdir == loader.paths.cache_dir("cc") / f"9.9.9-guest-{hashlib.sha256(btf).hexdigest()[:12]}"
    host_dump = loader.process.run(["bpftool", "btf", "dump", "file", str(HOST_BTF), "format", "c"]).stdout
    assert (kdir / "vmlinux.h").read_text() == host_dump
    assert list(kdir.glob("*.btf")) == []  # the raw copy bpftool read is gone
    assert loader.guest_kernel_dir(tmp_path / "vmlinuz-missing") is None  # then the guest dumps its own
