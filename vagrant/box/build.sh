#!/usr/bin/env bash
# Build the mptcplab Vagrant box from Debian's own packages: no prebuilt image is downloaded.
#
#   vagrant/box/build.sh [--arch amd64|arm64] [--out DIR] [--version V] [--stage kernel|rootfs|image|boxes|all]
#   vagrant/box/build.sh --simulate [--arch A]   resolve the package list against the archive, build nothing
#   vagrant/box/build.sh --plain ...    a plain Debian base box (no lab tools, no kit): what
#                                       `vagrant up` provisions from scratch, like a public box
#
# Stages (each reuses the previous stage's output in DIR, so a failed late stage is cheap to redo):
#   kernel  the kit's box kernel (`mptcplab box kernel --arch ARCH`: Debian's 6.12 with the paper's
#           minRTT scheduler, cached in ~/.cache/mptcplab/box-kernel) as DIR/kernel-ARCH/*.deb; the
#           rootfs installs it beside Debian's own kernel and boots it by default, so Lab 1's paper
#           point runs in the box natively (MPTCPLAB_BOX_KERNEL=debian: Debian's kernel only)
#   rootfs  mmdebstrap of Debian 13 (trixie) into DIR/rootfs-ARCH.tar, pre-provisioned in the chroot
#           by vagrant/provision.sh --image: lab tools, the kit's venv with JupyterLab (enabled as a
#           service), the repository (with its reference results) in /opt/mptcplab/src, the vagrant
#           user with Vagrant's insecure keys (Vagrant swaps them for a fresh key on first `up`)
#   image   a 20 GiB sparse disk: that tree on ext4, plus a bootloader (amd64: GRUB on BIOS/MBR;
#           arm64: GRUB EFI on an ESP, the only way an arm64 VM boots), as DIR/disk-ARCH.qcow2
#   boxes   DIR/mptcplab-ARCH-libvirt.box (qcow2; also what the vagrant-qemu provider imports) and
#           DIR/mptcplab-ARCH-virtualbox.box (OVF + streamOptimized VMDK; arm64: for VirtualBox 7.1+
#           on Apple Silicon); DIR/metadata.json lists them with their SHA-256
#
# Needs root, and: apt-get install mmdebstrap qemu-utils fdisk dosfstools e2fsprogs (arm64: also mtools)
# (arm64 on an amd64 host also: qemu-user-static binfmt-support, with binfmt_misc mounted).
# Environment: MPTCPLAB_BOX_MIRROR (http://deb.debian.org/debian), MPTCPLAB_BOX_SUITE (trixie),
# MPTCPLAB_BOX_DISK_GB (20), MPTCPLAB_BOX_KERNEL (kit | debian), MPTCPLAB (the kit's command,
# default the checkout's .venv/bin/mptcplab: `make setup-dev`), MPTCPLAB_BOX_BASE_URL (URL prefix of the .box files in metadata.json;
# empty = file:// URLs of the output directory), MPTCPLAB_BOX_CA_BUNDLE (the host's CA bundle:
# trusted for the build's downloads only).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ARCH=amd64
OUT=$repo/build/box
STAGE=all
SIMULATE=0
PLAIN=0
VERSION=$(date -u +%Y.%m.%d)
MIRROR=${MPTCPLAB_BOX_MIRROR:-http://deb.debian.org/debian}
SUITE=${MPTCPLAB_BOX_SUITE:-trixie}
DISK_GB=${MPTCPLAB_BOX_DISK_GB:-20}
BASE_URL=${MPTCPLAB_BOX_BASE_URL:-}
BOX_KERNEL=${MPTCPLAB_BOX_KERNEL:-kit}
MPTCPLAB=${MPTCPLAB:-$repo/.venv/bin/mptcplab}
# Trusted for the build's own downloads (pip), never installed in the box: lets a build host behind
# a TLS-inspecting proxy, whose CA is in the host's bundle, fetch from PyPI.
CA_BUNDLE=${MPTCPLAB_BOX_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

say() { printf '\033[1m[mptcplab box]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[mptcplab box] FAILED: %s\033[0m\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --arch) ARCH=$2; shift ;;
    --out) OUT=$2; shift ;;
    --version) VERSION=$2; shift ;;
    --stage) STAGE=$2; shift ;;
    --simulate) SIMULATE=1 ;;
    --plain) PLAIN=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set/!p}' "$0"; exit 0 ;;  # the header comment
    *) die "unknown argument $1 (try --help)" ;;
  esac
  shift
done
BOX_NAME=mptcplab/debian-13
[ "$PLAIN" = 1 ] && BOX_NAME=mptcplab/debian-13-plain
case $ARCH in amd64|arm64) ;; *) die "--arch $ARCH: choose amd64 or arm64" ;; esac
case $STAGE in kernel|rootfs|image|boxes|all) ;; *) die "--stage $STAGE: choose kernel, rootfs, image, boxes or all" ;; esac
case $BOX_KERNEL in kit|debian) ;; *) die "MPTCPLAB_BOX_KERNEL=$BOX_KERNEL: choose kit or debian" ;; esac
[[ $VERSION =~ ^[0-9]+(\.[0-9]+)*$ ]] || die "--version $VERSION: Vagrant wants digits and dots, e.g. 2026.11.23"

# What the box boots with; the lab tools come from provision.sh's own list (one list, not two).
base_packages() {
  echo systemd-sysv systemd-resolved systemd-timesyncd dbus udev kmod procps netbase initramfs-tools zstd e2fsprogs \
       openssh-server sudo ca-certificates curl rsync nfs-common qemu-guest-agent less nano bash-completion \
       "linux-image-$ARCH"
  if [ "$ARCH" = amd64 ]; then echo grub-pc; else echo grub-efi-arm64; fi
}
lab_packages() {
  [ "$PLAIN" = 1 ] && return 0
  MPTCPLAB_OS_ID=debian bash "$repo/vagrant/provision.sh" --list-packages
}
include() { echo "$(base_packages) $(lab_packages)" | xargs | tr ' ' ','; }

# The chroot gets a clean environment (the host's PIP_*, SSL_* settings name host paths), plus
# the proxy settings, if any, that the downloads need.
chroot_env() {
  local v
  printf 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb'
  for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!v:-}" ] && printf ' %s=%q' "$v" "${!v}"
  done
  echo
}

stage_kernel() {
  [ -x "$MPTCPLAB" ] || die "$MPTCPLAB missing: make setup-dev (or MPTCPLAB=path/to/mptcplab)"
  local built
  built=$("$MPTCPLAB" box kernel --arch "$ARCH" | tail -1)
  rm -rf "$OUT/kernel-$ARCH"; mkdir -p "$OUT/kernel-$ARCH"
  cp "$built"/linux-image-*.deb "$OUT/kernel-$ARCH/"
  say "kernel: $(ls "$OUT/kernel-$ARCH")"
}

stage_rootfs() {
  local tar=$OUT/rootfs-$ARCH.tar src deb kit=()
  if [ "$BOX_KERNEL" = kit ]; then
    # The kit's kernel, installed beside Debian's as GRUB's default by provision.sh's kernel step
    # (the Lima VM's provisioning runs the same), copied in: a plain box has no kit in /opt.
    deb=$(find "$OUT/kernel-$ARCH" -maxdepth 1 -name 'linux-image-*.deb' 2>/dev/null | head -1 || true)  # none: said below
    [ -n "$deb" ] || die "no kit kernel in $OUT/kernel-$ARCH: run --stage kernel first (or MPTCPLAB_BOX_KERNEL=debian)"
    # shellcheck disable=SC2016  # $1 is the new root, expanded by mmdebstrap's hook shell
    kit=(--customize-hook="cp '$deb' \"\$1/tmp/kit-kernel.deb\" && cp '$repo/vagrant/provision.sh' \"\$1/tmp/kit-provision.sh\""
         --customize-hook="chroot \"\$1\" env -i $(chroot_env) MPTCPLAB_KERNEL_DEB=/tmp/kit-kernel.deb bash /tmp/kit-provision.sh --image --only kernel"
         --customize-hook='rm "$1/tmp/kit-kernel.deb" "$1/tmp/kit-provision.sh"')
  fi
  src=$(mktemp -d)
  # The box carries the repository as committed (git archive: no venv, no build output), so the
  # kit's venv and the reference results are there before the first `vagrant up`.
  git -C "$repo" archive --format=tar HEAD | tar -x -C "$src"
  git -C "$repo" rev-parse HEAD >"$src/.box-commit"
  say "rootfs: mmdebstrap $SUITE/$ARCH from $MIRROR -> $tar"
  # shellcheck disable=SC2016  # the hooks are expanded by mmdebstrap, with $1 = the new root
  mmdebstrap --mode=root --variant=apt --arch="$ARCH" --format=tar \
    --components=main --aptopt='Acquire::Retries "3"' \
    --include="$(include)" \
    --essential-hook='echo "wireshark-common wireshark-common/install-setuid boolean true" | chroot "$1" debconf-set-selections' \
    --customize-hook="mkdir -p \"\$1/opt/mptcplab\" && cp -a $src \"\$1/opt/mptcplab/src\"" \
    --customize-hook="cp $here/customize.sh \"\$1/tmp/customize.sh\"" \
    --customize-hook="if [ -s '$CA_BUNDLE' ]; then cp '$CA_BUNDLE' \"\$1/tmp/build-ca.crt\"; fi" \
    --customize-hook="chroot \"\$1\" env -i $(chroot_env) MPTCPLAB_BOX_PLAIN=$PLAIN bash /tmp/customize.sh" \
    "${kit[@]}" \
    --customize-hook='rm -f "$1/tmp/customize.sh" "$1/tmp/build-ca.crt"' \
    "$SUITE" "$tar.part" "$MIRROR"
  rm -rf "$src"
  mv "$tar.part" "$tar"
  say "rootfs: $(du -h "$tar" | cut -f1) $tar"
}

part_dev() { # part_dev LOOP N: the node of partition N, made if the kernel's scan did not appear
  local dev=${1}p$2 sys
  [ -b "$dev" ] || partx -a "$1" 2>/dev/null || true
  for _ in $(seq 50); do [ -b "$dev" ] && { echo "$dev"; return 0; }; sleep 0.2; done
  sys=/sys/block/${1#/dev/}/${dev#/dev/}/dev
  [ -r "$sys" ] && mknod "$dev" b "$(cut -d: -f1 "$sys")" "$(cut -d: -f2 "$sys")" && { echo "$dev"; return 0; }
  die "no device node for partition $2 of $1"
}

stage_image() {
  local tar=$OUT/rootfs-$ARCH.tar raw=$OUT/disk-$ARCH.raw rootpart esp=""
  [ -f "$tar" ] || die "$tar missing: run --stage rootfs first"
  [ "$ARCH" = amd64 ] || command -v mcopy >/dev/null || die "mtools missing (the arm64 ESP): apt-get install mtools"
  rm -f "$raw"; truncate -s "${DISK_GB}G" "$raw"
  if [ "$ARCH" = amd64 ]; then
    printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$raw"
  else
    printf 'label: gpt\nstart=2048, size=256MiB, type=uefi\ntype=linux\n' | sfdisk -q "$raw"
  fi
  mnt=$(mktemp -d)
  loop=$(losetup -fP --show "$raw")
  cleanup_image() { # globals mnt, loop: the EXIT trap runs after this function's locals are gone
    [ -n "${uuid_link_kept:-}" ] || rm -f "/dev/disk/by-uuid/${uuid:-none}"
    for m in dev/pts dev proc sys ""; do umount "$mnt/$m" 2>/dev/null || true; done
    losetup -d "$loop" || say "could not detach $loop: losetup -d $loop"
  }
  trap cleanup_image EXIT
  if [ "$ARCH" = amd64 ]; then rootpart=$(part_dev "$loop" 1)
  else esp=$(part_dev "$loop" 1); rootpart=$(part_dev "$loop" 2); fi
  # No metadata_csum_seed/orphan_file: GRUB and older e2fsck (e.g. a host's fsck of a mounted copy)
  # reject ext4 features newer than they are.
  mkfs.ext4 -q -L mptcplab-root -O ^metadata_csum_seed,^orphan_file "$rootpart" 2>/dev/null \
    || mkfs.ext4 -q -L mptcplab-root "$rootpart"
  mount "$rootpart" "$mnt"
  tar -x -p --xattrs --xattrs-include='*' --numeric-owner -f "$tar" -C "$mnt"
  # systemd-resolved answers DNS in the VM (the build's chroot had the host's resolv.conf).
  ln -sfn ../run/systemd/resolve/stub-resolv.conf "$mnt/etc/resolv.conf"
  uuid=$(blkid -s UUID -o value "$rootpart")
  printf 'UUID=%s / ext4 errors=remount-ro 0 1\n' "$uuid" >"$mnt/etc/fstab"
  if [ -n "$esp" ]; then
    mkfs.vfat -F 32 -n EFI "$esp" >/dev/null
    mkdir -p "$mnt/boot/efi"
    # nofail: the running VM never needs its ESP (only a GRUB update writes it); without it, an
    # emulated first boot whose udev is still busy after 90 s stopped in emergency mode (root locked).
    printf 'UUID=%s /boot/efi vfat umask=0077,nofail 0 1\n' "$(blkid -s UUID -o value "$esp")" >>"$mnt/etc/fstab"
  fi
  for m in dev dev/pts proc sys; do mount --bind "/$m" "$mnt/$m"; done
  if [ "$ARCH" = amd64 ]; then
    chroot "$mnt" grub-install --target=i386-pc "$loop"
  else
    # What `grub-install --target=arm64-efi --removable` does, by hand: grub-install wants the ESP
    # mounted, and some build hosts' kernels have no vfat (the kit's own build machine's, many
    # containers'). So: GRUB's modules into /boot/grub, a core image whose embedded config finds
    # the root file system by UUID (grub-install's own load.cfg), and that image written into the
    # ESP as EFI/BOOT/BOOTAA64.EFI (found by firmware without NVRAM entries) with mtools, unmounted.
    mkdir -p "$mnt/boot/grub/arm64-efi"
    cp "$mnt"/usr/lib/grub/arm64-efi/*.mod "$mnt"/usr/lib/grub/arm64-efi/*.lst "$mnt/boot/grub/arm64-efi/"
    # shellcheck disable=SC2016  # $root is GRUB's variable
    printf 'search.fs_uuid %s root\nset prefix=($root)/boot/grub\n' "$uuid" >"$mnt/boot/grub/load.cfg"
    chroot "$mnt" grub-mkimage -O arm64-efi -c /boot/grub/load.cfg -p /boot/grub -o /boot/grub/BOOTAA64.EFI \
      part_gpt ext2 search_fs_uuid
    MTOOLS_SKIP_CHECK=1 mmd -i "$esp" ::/EFI ::/EFI/BOOT
    MTOOLS_SKIP_CHECK=1 mcopy -i "$esp" "$mnt/boot/grub/BOOTAA64.EFI" ::/EFI/BOOT/BOOTAA64.EFI
    rm "$mnt/boot/grub/BOOTAA64.EFI"
  fi
  # GRUB writes root=UUID=... only if udev's /dev/disk/by-uuid link exists; without udev (a
  # container, a chroot build host), make that one link for the time of update-grub.
  if [ ! -e "/dev/disk/by-uuid/$uuid" ]; then
    mkdir -p /dev/disk/by-uuid && ln -s "$rootpart" "/dev/disk/by-uuid/$uuid"
  else uuid_link_kept=1; fi
  chroot "$mnt" update-grub
  [ -n "${uuid_link_kept:-}" ] || rm -f "/dev/disk/by-uuid/$uuid"
  grep -q "root=UUID=$uuid" "$mnt/boot/grub/grub.cfg" || die "grub.cfg does not boot root=UUID=$uuid"
  if [ -f "$mnt/etc/default/grub.d/mptcplab-kernel.cfg" ]; then  # the kit's kernel must be the default entry
    grep -q "^set default=\"Advanced options.*mptcplab" "$mnt/boot/grub/grub.cfg" || die "grub.cfg does not boot the kit's kernel by default"
  fi
  cleanup_image; trap - EXIT
  rmdir "$mnt"
  say "image: qemu-img convert -> $OUT/disk-$ARCH.qcow2"
  qemu-img convert -c -O qcow2 "$raw" "$OUT/disk-$ARCH.qcow2"
  rm -f "$raw"
}

stage_boxes() {
  local qcow=$OUT/disk-$ARCH.qcow2 dir
  [ -f "$qcow" ] || die "$qcow missing: run --stage image first"
  dir=$(mktemp -d)
  # libvirt: vagrant-libvirt's box format (box.img + metadata.json with format and virtual_size in GiB).
  ln "$qcow" "$dir/box.img" 2>/dev/null || cp "$qcow" "$dir/box.img"
  printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": %d, "architecture": "%s"}\n' \
    "$DISK_GB" "$ARCH" >"$dir/metadata.json"
  sed "s/@ARCH@/$ARCH/" "$here/Vagrantfile.libvirt" >"$dir/Vagrantfile"
  tar -C "$dir" -cf "$OUT/mptcplab-$ARCH-libvirt.box.part" metadata.json Vagrantfile box.img
  mv "$OUT/mptcplab-$ARCH-libvirt.box.part" "$OUT/mptcplab-$ARCH-libvirt.box"
  rm -rf "$dir"
  # metadata.json now and again after each further box: the libvirt box is usable meanwhile.
  python3 "$here/metadata.py" write --dir "$OUT" --version "$VERSION" --base-url "$BASE_URL" --name "$BOX_NAME"
  if [ "$PLAIN" = 0 ]; then  # a plain box is a provisioning test: libvirt only
    # VirtualBox: OVF + streamOptimized VMDK, what `VBoxManage import` (and so Vagrant) reads. arm64
    # (VirtualBox 7.1+ on Apple Silicon): box-arm64.ovf, whose vbox:Machine section makes the import
    # an ARM machine (UEFI, virtio-scsi disk, virtio NIC); its two UUIDs are fresh for each build.
    dir=$(mktemp -d)
    qemu-img convert -O vmdk -o subformat=streamOptimized "$qcow" "$dir/mptcplab-disk001.vmdk"
    local bytes ovf=$here/box.ovf; bytes=$(stat -c %s "$dir/mptcplab-disk001.vmdk")
    [ "$ARCH" = arm64 ] && ovf=$here/box-arm64.ovf
    sed -e "s/@DISK_BYTES@/$((DISK_GB * 1024 * 1024 * 1024))/" -e "s/@FILE_BYTES@/$bytes/" \
      -e "s/@MACHINE_UUID@/$(cat /proc/sys/kernel/random/uuid)/" -e "s/@DISK_UUID@/$(cat /proc/sys/kernel/random/uuid)/g" \
      "$ovf" >"$dir/box.ovf"
    printf '{"provider": "virtualbox", "architecture": "%s"}\n' "$ARCH" >"$dir/metadata.json"
    sed "s/@ARCH@/$ARCH/" "$here/Vagrantfile.virtualbox" >"$dir/Vagrantfile"
    tar -C "$dir" -cf "$OUT/mptcplab-$ARCH-virtualbox.box.part" box.ovf mptcplab-disk001.vmdk metadata.json Vagrantfile
    mv "$OUT/mptcplab-$ARCH-virtualbox.box.part" "$OUT/mptcplab-$ARCH-virtualbox.box"
    rm -rf "$dir"
  fi
  python3 "$here/metadata.py" write --dir "$OUT" --version "$VERSION" --base-url "$BASE_URL" --name "$BOX_NAME"
  say "boxes:"; ls -l "$OUT"/*.box "$OUT/metadata.json"
}

[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap --mode=root, loop devices, chroot)"
command -v mmdebstrap >/dev/null || die "mmdebstrap missing: apt-get install mmdebstrap"
if [ "$SIMULATE" = 1 ]; then
  # Resolves every package (and its dependencies) against the real archive; downloads no .deb.
  exec mmdebstrap --simulate --mode=root --variant=apt --arch="$ARCH" --components=main \
    --include="$(include)" "$SUITE" /dev/null "$MIRROR"
fi
command -v qemu-img >/dev/null || die "qemu-img missing: apt-get install qemu-utils"
mkdir -p "$OUT"
start=$(date +%s)
case $STAGE in
  kernel) stage_kernel ;;
  rootfs) stage_rootfs ;;
  image) stage_image ;;
  boxes) stage_boxes ;;
  all) if [ "$BOX_KERNEL" = kit ]; then stage_kernel; fi; stage_rootfs; stage_image; stage_boxes ;;
esac
say "done in $(( $(date +%s) - start )) s"
