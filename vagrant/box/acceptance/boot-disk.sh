#!/usr/bin/env bash
# Boot a box's disk straight under QEMU and wait for its login prompt: the check for the disks
# this host cannot hand to their provider (the VirtualBox box's VMDK: no VirtualBox here; the arm64
# box on an amd64 host). It shows the disk itself is sound: bootloader, kernel, systemd, and which
# of the box's services started (the serial console carries systemd's status lines).
#
#   vagrant/box/acceptance/boot-disk.sh DISK [--arch amd64|arm64] [--as libvirt|virtualbox]
#                                            [--timeout S] [--log FILE] [--until TEXT]
#
# DISK: a qcow2 or VMDK (extract the VMDK from the VirtualBox .box with `tar -xf BOX
# mptcplab-disk001.vmdk`). QEMU runs with -snapshot: the disk is never written. Software emulation
# (TCG; ACCEL=kvm to use KVM), one vCPU, 2 GiB, user-mode networking (the box's DHCP client).
# --as: the hardware the provider gives the disk: libvirt's virtio disk and NIC (the default), or
# what the VirtualBox box's OVF asks for: amd64 (box.ovf) a disk on an AHCI (SATA) controller and an
# E1000 NIC; arm64 (box-arm64.ovf) UEFI on QEMU's virt board with a GICv3 (what VirtualBox's
# ARMv8Virtual platform is modelled on), a disk on a virtio-scsi controller, a virtio NIC and a RAM
# framebuffer. arm64 needs qemu-system-arm and qemu-efi-aarch64 (UEFI firmware).
# Exit 0 when the console shows TEXT (--until; default "login:", the login prompt).
# shellcheck disable=SC2054  # the commas in QEMU's options are inside values, not separators
set -uo pipefail
disk=${1:?usage: boot-disk.sh DISK [--arch amd64|arm64] [--as libvirt|virtualbox] [--timeout S] [--log FILE] [--until TEXT]}
shift
arch=amd64
as=libvirt
timeout=1800
log=
until="login:"
while [ $# -gt 0 ]; do
  case $1 in
    --arch) arch=$2; shift ;;
    --as) as=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --log) log=$2; shift ;;
    --until) until=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case $arch in amd64|arm64) ;; *) echo "--arch $arch: choose amd64 or arm64" >&2; exit 2 ;; esac
case $as in libvirt|virtualbox) ;; *) echo "--as $as: choose libvirt or virtualbox" >&2; exit 2 ;; esac
[ -r "$disk" ] || { echo "cannot read $disk" >&2; exit 2; }
log=${log:-$(mktemp /tmp/boot-disk.XXXXXX.log)}
: >"$log"
accel=${ACCEL:-tcg}
common=(-accel "$accel" -m 2048 -smp 1 -display none -no-reboot -serial "file:$log")
case $as in
  libvirt) common+=(-drive "file=$disk,if=virtio,snapshot=on" -nic user,model=virtio-net-pci) ;;
  virtualbox) if [ "$arch" = amd64 ]; then
                common+=(-device ahci,id=sata -drive "id=disk0,file=$disk,if=none,snapshot=on"
                         -device ide-hd,drive=disk0,bus=sata.0 -nic user,model=e1000)
              else
                common+=(-device virtio-scsi-pci,id=scsi -drive "id=disk0,file=$disk,if=none,snapshot=on"
                         -device scsi-hd,drive=disk0,bus=scsi.0 -nic user,model=virtio-net-pci -device ramfb)
              fi ;;
esac
board=virt; [ "$as" = virtualbox ] && board=virt,gic-version=3
case $arch in
  amd64) cpu=max,avx2=off; [ "$accel" = kvm ] && cpu=host  # avx2=off: places/vm.py's TCG_CPU, why
         cmd=(qemu-system-x86_64 -cpu "$cpu" "${common[@]}") ;;
  arm64) firmware=${MPTCPLAB_AARCH64_FIRMWARE:-/usr/share/qemu-efi-aarch64/QEMU_EFI.fd}
         [ -r "$firmware" ] || { echo "no UEFI firmware at $firmware (apt-get install qemu-efi-aarch64)" >&2; exit 2; }
         # pauth-impdef: QEMU's cheap pointer-authentication hash instead of the architected QARMA,
         # which costs an emulated arm64 CPU much of its speed (KVM uses the host's CPU instead).
         cpu=max,pauth-impdef=on; [ "$accel" = kvm ] && cpu=host
         cmd=(qemu-system-aarch64 -M "$board" -cpu "$cpu" -bios "$firmware" "${common[@]}") ;;
esac
echo "${cmd[*]}"
t0=$(date +%s)
"${cmd[@]}" 2>"$log.qemu" &  # QEMU's own messages: shown when the boot fails
qemu=$!
trap 'kill "$qemu" 2>/dev/null; wait "$qemu" 2>/dev/null' EXIT
rc=1
while kill -0 "$qemu" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$timeout" ]; do
  if grep -aqF -- "$until" "$log"; then rc=0; break; fi
  sleep 5
done
# A guest that powers off right after TEXT (arm64-small-disk.sh's) ends QEMU before the next look.
if [ "$rc" != 0 ] && grep -aqF -- "$until" "$log"; then rc=0; fi
elapsed=$(( $(date +%s) - t0 ))
# The console's lines that say what booted, without the terminal's colour codes.
clean() { sed 's/\x1b\[[0-9;]*[a-zA-Z]//g; s/\r//g' "$log"; }
clean | grep -aE "^Linux version|Welcome to|Started .*(ssh|mptcplab|networkd)|Reached target.*Multi-User|FAILED|login:|mptcplab-arm64-boot:" | head -n 20
if [ "$rc" = 0 ]; then
  echo "'$until' after $elapsed s ($arch, $accel, hardware as $as); console: $log"
else
  echo "no '$until' after $elapsed s ($arch, $accel, hardware as $as); last console lines ($log):"
  clean | tail -n 15
  cat "$log.qemu"
fi
exit "$rc"
