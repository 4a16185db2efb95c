#!/usr/bin/env bash
# Install what the kit needs on a Debian/Ubuntu host (or the Vagrant VM), non-interactively.
# Idempotent: already-installed packages are skipped by apt; the venv is reused.
# Usage: scripts/install-deps.sh [--dev] [--no-apt]   (run as root for the apt part)
#   --dev  also what the test suite needs: vagrant + vagrant-libvirt (validate the Vagrantfile for
#          both providers), chromium (check that the site's figures draw) and mmdebstrap (resolve
#          the Vagrant box's package list against Debian 13: vagrant/box/build.sh --simulate),
#          slurm-wlm + munge (the Slurm integration test starts a one-node cluster)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${MPTCPLAB_VENV:-$here/.venv}

# The experiments' toolset (iproute2, tcpdump, tshark, ..., clang and bpftool for Lab 2): one list,
# vagrant/provision.sh's, which the student VM and the box build (vagrant/box/build.sh) install too.
read -r -a apt_pkgs <<<"$(bash "$here/vagrant/provision.sh" --list-packages | tr '\n' ' ')"
apt_pkgs+=(
  kmod procps bc flex bison patch libelf-dev xz-utils                      # UML kernel build (host only)
  shellcheck                                                               # CI lint of provisioning
  python3-pip
)
# The VM place (`--where vm`): QEMU, a static busybox for virtme-ng's init, and a stock kernel package;
# zstd (amd64): Lab 2's BPF objects are compiled on the host from the stock kernel image's BTF (bzImage, zstd).
case "$(dpkg --print-architecture 2>/dev/null || echo amd64)" in
  arm64) apt_pkgs+=(qemu-system-arm busybox-static) ;;
  *) apt_pkgs+=(qemu-system-x86 busybox-static zstd) ;;
esac

# The stock distribution kernel the VM place boots (its /boot/vmlinuz-* and /lib/modules/*).
# Debian 12: the 6.12 kernel from bookworm-backports (6.1 lacks nothing the labs need, but 6.12 is
# the series of the kit's UML kernel, so the two places run the same MPTCP code); Ubuntu: its
# generic kernel. Only through apt; a host where no package fits skips the VM place (doctor says so).
vm_kernel_package() {
  local arch; arch=$(dpkg --print-architecture)
  # shellcheck source=/dev/null
  . /etc/os-release
  if [ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "install-deps: adding bookworm-backports to apt's sources (for the 6.12 kernel)"
      echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/bookworm-backports.list
      apt-get update -qq
    fi
    local pkg
    pkg=$(apt-cache search --names-only "^linux-image-6\.12\.[0-9.]+\+deb12-${arch}\$" | awk '{print $1}' | sort -V | tail -n1)
    if [ -z "$pkg" ]; then echo "install-deps: no linux-image-6.12.*+deb12-${arch} package found; the VM place is skipped" >&2; return 0; fi
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" && return 0
    echo "install-deps: apt-get install $pkg (the VM place's kernel)"
    apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends -t bookworm-backports "$pkg" >/dev/null
  elif [ "${ID:-}" = ubuntu ]; then
    dpkg-query -W -f='${Status}' linux-image-generic 2>/dev/null | grep -q "ok installed" && return 0
    echo "install-deps: apt-get install linux-image-generic (the VM place's kernel)"
    apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends linux-image-generic >/dev/null \
      || echo "install-deps: installing linux-image-generic failed; the VM place is skipped" >&2
  else
    echo "install-deps: ${PRETTY_NAME:-this distribution}: no known stock kernel package; the VM place is skipped" >&2
  fi
}

dev=0; apt=1
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --no-apt) apt=0 ;;
    *) echo "install-deps: unknown option $arg" >&2; exit 2 ;;
  esac
done
[ "$dev" = 1 ] && apt_pkgs+=(vagrant vagrant-libvirt chromium mmdebstrap slurm-wlm munge)

if [ "$apt" = 1 ]; then
  if [ "$(id -u)" -ne 0 ]; then echo "install-deps: run as root (apt-get), or pass --no-apt" >&2; exit 2; fi
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer it up front.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections
  missing=()
  for p in "${apt_pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  # The UML kernel is built from the distribution's kernel source (newest linux-source-6.x available).
  src=$(apt-cache search --names-only '^linux-source-6\.[0-9]+$' 2>/dev/null | awk '{print $1}' | sort -V | tail -n1 || true)
  if [ -n "$src" ] && ! dpkg-query -W -f='${Status}' "$src" 2>/dev/null | grep -q "ok installed"; then missing+=("$src"); fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: apt-get install ${missing[*]}"
    apt-get update -qq
    apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  vm_kernel_package
fi

if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q -e "${here}[dev]"
echo "install-deps: done (venv: $venv)"
