#!/usr/bin/env bash
# A small arm64 disk laid out as the arm64 box's (GPT; an ESP holding GRUB's BOOTAA64.EFI, made as
# build.sh makes it; an ext4 root with /boot/grub, Debian's arm64 kernel and an initramfs), built in
# a minute from Debian's own packages without running any of their arm64 code. Its init loads the
# drivers a VirtualBox ARM machine's devices need (virtio-scsi disk, virtio-net NIC), reports what
# it finds, and powers off. It stands in for the box's 2 GB arm64 disk where building that (an hour
# under emulation) does not fit: booted with `boot-disk.sh --arch arm64 --as virtualbox --until
# mptcplab-arm64-boot:`, it shows that UEFI finds GRUB on a virtio-scsi disk, GRUB the kernel, and
# the kernel (the same Debian 13 arm64 kernel package as the box's) its disk and NIC.
#
#   vagrant/box/acceptance/arm64-small-disk.sh OUT_DIR     writes OUT_DIR/small-arm64.vmdk (streamOptimized,
#                                                           the VirtualBox box's disk format)
# Needs root (mmdebstrap), and: mmdebstrap qemu-utils fdisk dosfstools mtools e2fsprogs kmod cpio.
set -euo pipefail
out=${1:?usage: arm64-small-disk.sh OUT_DIR}
mirror=${MPTCPLAB_BOX_MIRROR:-http://deb.debian.org/debian}
suite=${MPTCPLAB_BOX_SUITE:-trixie}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The packages, extracted only (mmdebstrap's extract variant runs no maintainer script, so no arm64
# code runs here and no QEMU user emulation is needed).
mmdebstrap --variant=extract --mode=root --arch=arm64 --components=main \
  --include=linux-image-arm64,grub-efi-arm64-bin,busybox-static "$suite" "$work/pkgs" "$mirror" 2>"$work/mmdebstrap.log" \
  || { tail -n 20 "$work/mmdebstrap.log" >&2; exit 1; }
kver=$(ls "$work/pkgs/usr/lib/modules")
# grub-mkimage is architecture-independent in what it writes; the host's copy (from grub-common,
# downloaded and unpacked, not installed) builds the arm64 EFI image from the arm64 package's modules.
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root grub-common >/dev/null && dpkg-deb -x grub-common_*.deb host-grub)

# initramfs: busybox, the modules in load order (the host's depmod/modprobe resolve the arm64 tree's
# dependencies; decompressed, so busybox's insmod needs no xz), and an init that reports and halts.
[ -e "$work/pkgs/lib" ] || ln -s usr/lib "$work/pkgs/lib"  # depmod and modprobe look in BASE/lib/modules
depmod -b "$work/pkgs" "$kver"
ird=$work/initramfs
mkdir -p "$ird/bin" "$ird/lib/modules" "$ird/proc" "$ird/sys" "$ird/dev"
cp "$work/pkgs/usr/bin/busybox" "$ird/bin/busybox"
order=()
for m in virtio_scsi sd_mod virtio_net; do
  while read -r _ path _; do
    name=$(basename "$path" .xz)
    [ -e "$ird/lib/modules/$name" ] && continue
    xz -dc "$path" >"$ird/lib/modules/$name"
    order+=("$name")
  done < <(modprobe -d "$work/pkgs" -S "$kver" --show-depends "$m" | grep '^insmod ')
done
cat >"$ird/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in ${order[*]}; do insmod /lib/modules/\$m || echo "insmod \$m failed"; done
sleep 3  # the SCSI scan and the partition table read are asynchronous
disk=\$(ls /sys/block | grep '^sd' | tr '\n' ' ')
parts=\$(cat /proc/partitions | awk '/sd[a-z][0-9]/ {print \$4}' | tr '\n' ' ')
nic=\$(for n in /sys/class/net/*; do [ -e \$n/device/driver ] && echo "\$(basename \$n) (\$(basename \$(readlink \$n/device/driver)))"; done | tr '\n' ' ')
efi=no; [ -d /sys/firmware/efi ] && efi=yes
echo "mptcplab-arm64-boot: kernel \$(uname -r), booted through UEFI: \$efi; disk: \$disk(partitions \$parts); NIC: \$nic"
poweroff -f
EOF
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -9) >"$work/initrd.img"

# root file system: /boot with the kernel, the initramfs and GRUB's modules and menu.
root=$work/root
mkdir -p "$root/boot/grub/arm64-efi"
cp "$work/pkgs/boot/vmlinuz-$kver" "$root/boot/vmlinuz"
cp "$work/initrd.img" "$root/boot/initrd.img"
cp "$work/pkgs/usr/lib/grub/arm64-efi/"*.mod "$work/pkgs/usr/lib/grub/arm64-efi/"*.lst "$root/boot/grub/arm64-efi/"
cat >"$root/boot/grub/grub.cfg" <<'EOF'
set timeout=0
menuentry "mptcplab arm64 small disk" {
  linux /boot/vmlinuz console=ttyAMA0 panic=10
  initrd /boot/initrd.img
}
EOF
uuid=$(cat /proc/sys/kernel/random/uuid)
truncate -s 192M "$work/root.img"
mkfs.ext4 -q -L mptcplab-root -U "$uuid" -O ^metadata_csum_seed,^orphan_file -d "$root" "$work/root.img"

# ESP: GRUB's core image with build.sh's embedded config (find the root file system by UUID).
# shellcheck disable=SC2016  # $root is GRUB's variable
printf 'search.fs_uuid %s root\nset prefix=($root)/boot/grub\n' "$uuid" >"$work/load.cfg"
"$work/host-grub/usr/bin/grub-mkimage" -d "$work/pkgs/usr/lib/grub/arm64-efi" -O arm64-efi -c "$work/load.cfg" \
  -p /boot/grub -o "$work/BOOTAA64.EFI" part_gpt ext2 search_fs_uuid
truncate -s 64M "$work/esp.img"
mkfs.vfat -F 32 -n EFI "$work/esp.img" >/dev/null
MTOOLS_SKIP_CHECK=1 mmd -i "$work/esp.img" ::/EFI ::/EFI/BOOT
MTOOLS_SKIP_CHECK=1 mcopy -i "$work/esp.img" "$work/BOOTAA64.EFI" ::/EFI/BOOT/BOOTAA64.EFI

# The disk: GPT, the ESP at 1 MiB, the root after it (the box's layout, smaller).
raw=$work/disk.raw
truncate -s 258M "$raw"
printf 'label: gpt\nstart=2048, size=64MiB, type=uefi\nstart=133120, size=192MiB, type=linux\n' | sfdisk -q "$raw"
dd if="$work/esp.img" of="$raw" bs=1M seek=1 conv=notrunc status=none
dd if="$work/root.img" of="$raw" bs=1M seek=65 conv=notrunc status=none
qemu-img convert -O vmdk -o subformat=streamOptimized "$raw" "$out/small-arm64.vmdk"
echo "small arm64 disk: $out/small-arm64.vmdk (kernel $kver, modules: ${order[*]})"
