#!/usr/bin/env python3
"""The box's metadata.json: what `vagrant box add URL-of-metadata.json` reads (name, versions,
providers with their URL and SHA-256). Standard library only, so it runs on any build host.

  metadata.py write  --dir DIR --version V [--base-url URL] [--name NAME]
  metadata.py rebase --dir DIR --base-url URL     point the URLs at where you host the files
  metadata.py verify --dir DIR                    the files next to metadata.json match their SHA-256

Vagrant (2.3/2.4) does not resolve a relative provider URL against the metadata's own URL, so
every URL is absolute: BASE_URL + file name, and BASE_URL defaults to file://DIR/ (a local build).
Box files are named mptcplab-ARCH-PROVIDER.box; the amd64 entry of each provider comes first, so a
Vagrant without architecture support (< 2.4) picks it.
"""

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

NAME = "mptcplab/debian-13"
DESCRIPTION = {NAME: "mptcplab: Debian 13 with the kit pre-provisioned",
               NAME + "-plain": "mptcplab: plain Debian 13 base box (vagrant up provisions the kit)"}
BOX_FILE = re.compile(r"^mptcplab-(?P<arch>amd64|arm64)-(?P<provider>libvirt|virtualbox)\.box$")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def base_url(directory: Path, given: str) -> str:
    url = given or directory.resolve().as_uri()
    return url if url.endswith("/") else url + "/"


def providers(directory: Path, base: str) -> list[dict]:
    boxes = [(m, p) for p in directory.iterdir() if (m := BOX_FILE.match(p.name))]
    if not boxes:
        sys.exit(f"metadata.py: no mptcplab-ARCH-PROVIDER.box in {directory}")
    out = []
    for m, path in sorted(boxes, key=lambda mp: (mp[0]["provider"], mp[0]["arch"] != "amd64", mp[1].name)):
        out.append({"name": m["provider"], "architecture": m["arch"], "default_architecture": m["arch"] == "amd64",
                    "url": base + path.name, "checksum_type": "sha256", "checksum": sha256(path)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["write", "rebase", "verify"])
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--version", default="")
    ap.add_argument("--base-url", default="")
    ap.add_argument("--name", default=NAME)
    a = ap.parse_args(argv)
    meta_path = a.dir / "metadata.json"
    if a.command == "write":
        if not re.fullmatch(r"\d+(\.\d+)*", a.version):
            sys.exit(f"metadata.py: --version {a.version!r}: digits and dots, e.g. 2026.11.23")
        meta = {"name": a.name, "description": DESCRIPTION.get(a.name, "mptcplab box"),
                "versions": [{"version": a.version, "providers": providers(a.dir, base_url(a.dir, a.base_url))}]}
    else:
        meta = json.loads(meta_path.read_text())
        for version in meta["versions"]:
            for p in version["providers"]:
                name = p["url"].rsplit("/", 1)[-1]
                if a.command == "rebase":
                    p["url"] = base_url(a.dir, a.base_url) + name
                else:
                    local = a.dir / name
                    if not local.exists():
                        print(f"absent here (hosted elsewhere?): {name}")
                        continue
                    if sha256(local) != p["checksum"]:
                        sys.exit(f"metadata.py: {name}: SHA-256 differs from metadata.json")
                    print(f"ok: {name}")
        if a.command == "verify":
            return 0
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {meta_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
