"""The BTF of a kernel that is not running, read from its image on disk (/boot/vmlinuz-*).

A guest's BPF objects need that kernel's `vmlinux.h`. Read here, on the host, it is the same bytes
the guest's /sys/kernel/btf/vmlinux shows (the `.BTF` section of its vmlinux: checked against
Debian's 6.12.117 guest, same sha256), so the host compiles the objects before the guest boots
instead of clang running under software emulation (54 s of a quick Lab 2 in the VM).

The kernel's own tool for the first step is scripts/extract-vmlinux, which ships only in kernel
source trees; the boot protocol (Documentation/arch/x86/boot.rst) says where the compressed
vmlinux lies (`payload_offset`, `payload_length`), so this reads exactly that, no magic search.
"""

from __future__ import annotations

import lzma
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

from ....core.errors import EnvironmentProblem

HDRS = b"HdrS"  # the x86 boot protocol's setup header signature, at 0x202


def payload(image: bytes) -> bytes:
    """The compressed vmlinux inside an x86 bzImage (boot protocol >= 2.08)."""
    if image[0x202:0x206] != HDRS:
        raise EnvironmentProblem("not an x86 bzImage (no HdrS setup header)")
    if struct.unpack_from("<H", image, 0x206)[0] < 0x208:
        raise EnvironmentProblem("bzImage boot protocol older than 2.08: no payload_offset")
    setup_sects = image[0x1F1] or 4  # 0 means 4 (boot.rst)
    offset, length = struct.unpack_from("<II", image, 0x248)
    start = (setup_sects + 1) * 512 + offset  # payload_offset counts from the protected-mode code
    return image[start:start + length]


def decompress(data: bytes) -> bytes:
    """A kernel payload in the compressions Debian and Ubuntu use (zstd, xz, gzip)."""
    if data.startswith(b"\x28\xb5\x2f\xfd"):
        if shutil.which("zstd") is None:
            raise EnvironmentProblem("zstd is not installed (apt-get install zstd): the kernel image is zstd-compressed")
        # The payload ends with the decompressed size (4 bytes, the kernel's size_append) after the
        # frame, which zstd would refuse as a second frame. Not process.run: the output is binary.
        out = subprocess.run(["zstd", "-dc"], input=data[:-4], capture_output=True)
        if out.returncode != 0:
            raise EnvironmentProblem(f"zstd -dc of the kernel's payload failed: {out.stderr.decode(errors='replace')[-300:]}")
        return out.stdout
    if data.startswith(b"\xfd7zXZ"):
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data)
    if data.startswith(b"\x1f\x8b"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)  # stops at the stream's end
    raise EnvironmentProblem(f"kernel payload in an unknown compression (starts {data[:4].hex()})")


def elf_section(elf: bytes, name: str) -> bytes:
    """A section's bytes from a 64-bit little-endian ELF (the kernel's vmlinux), by name."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise EnvironmentProblem("the kernel image did not decompress to a 64-bit little-endian ELF")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(i: int) -> tuple[int, int, int]:  # (sh_name, sh_offset, sh_size)
        fields = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
        return fields[0], fields[4], fields[5]

    _, str_off, str_size = header(shstrndx)
    names = elf[str_off:str_off + str_size]
    for i in range(shnum):
        name_off, off, size = header(i)
        if names[name_off:names.index(b"\0", name_off)] == name.encode():
            return elf[off:off + size]
    raise EnvironmentProblem(f"the kernel's vmlinux has no {name} section (CONFIG_DEBUG_INFO_BTF off?)")


def btf(image: Path) -> bytes:
    """The BTF the kernel in `image` will show as /sys/kernel/btf/vmlinux."""
    return elf_section(decompress(payload(Path(image).read_bytes())), ".BTF")
