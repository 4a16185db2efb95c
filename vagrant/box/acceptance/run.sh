#!/usr/bin/env bash
# The box's acceptance run: from a built box to a working VM and back to nothing, timed.
#
#   vagrant/box/acceptance/run.sh BOX_DIR [OUT_DIR]     (from the repository; libvirt running)
#
# BOX_DIR holds build.sh's metadata.json and .box files. Steps: `vagrant box add` (checks the
# SHA-256), `vagrant up --provider=libvirt`, `mptcplab doctor` and `mptcplab example` in the VM,
# JupyterLab on the forwarded port (HTTP 200 and, through screenshot.py, a headless-Chromium
# screenshot of Lab 1's notebook), `vagrant provision` again (idempotent), `vagrant destroy`, then
# what libvirt still holds. Writes OUT_DIR (default vagrant/box/acceptance/) /run.log, /timings.txt, /jupyterlab.png.
set -uo pipefail
boxdir=$(cd "${1:?usage: run.sh BOX_DIR [OUT_DIR]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
py=${ACCEPTANCE_PYTHON:-python3}  # a Python with playwright (pip install playwright; it drives the system's chromium)
out=$(mkdir -p "${2:-$repo/vagrant/box/acceptance}" && cd "${2:-$repo/vagrant/box/acceptance}" && pwd)
export MPTCPLAB_BOX_URL=$boxdir/metadata.json
# The box's own name (the kit's box, or build.sh --plain's base box, which `vagrant up` provisions).
MPTCPLAB_BOX=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "$MPTCPLAB_BOX_URL")
export MPTCPLAB_BOX
export MPTCPLAB_LIBVIRT_CONSOLE_LOG=/var/tmp/mptcplab-acceptance-console.log  # libvirt writes it as its own user
port=${MPTCPLAB_JUPYTER_PORT:-8888}
virsh="virsh -c qemu:///system"
: >"$out/timings.txt"
exec > >(tee "$out/run.log") 2>&1
cd "$repo" || exit 1

step() { # step NAME COMMAND...: run, time, record; stop the run on failure
  record "$@" || { echo "=== FAILED: $1"; exit 1; }
}

# The physics check may refuse `example` in a software-emulated VM: its 0 ms path cannot be
# emulated by a CPU that adds a millisecond to every round trip. That is recorded, not fatal.
record() { # record NAME COMMAND...: run, time, record; return its status
  local name=$1 t0 rc; shift
  echo; echo "=== $name: $*  ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"
  t0=$(date +%s)
  "$@"; rc=$?
  printf '%-28s %5d s  rc=%d\n' "$name" "$(( $(date +%s) - t0 ))" "$rc" | tee -a "$out/timings.txt"
  return "$rc"
}

jupyter_answers() { # JupyterLab (through the forwarded port) serves the lab UI
  local code i
  for i in $(seq 60); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/lab?token=mptcplab")
    [ "$code" = 200 ] && { echo "HTTP $code after $i tries"; return 0; }
    sleep 5
  done
  echo "JupyterLab did not answer 200 (last: $code)"; return 1
}

screenshot() { # Lab 1's notebook once JupyterLab has drawn it (screenshot.py waits for its cells)
  "$py" "$here/screenshot.py" "http://127.0.0.1:$port/lab/tree/notebooks/01-send-buffer.ipynb?token=mptcplab" \
    "$out/jupyterlab.png" --timeout 900
}

nothing_left() {
  $virsh list --all; $virsh vol-list default
  if $virsh list --all --name | grep -q .; then echo "a domain is left"; return 1; fi
  # The box's base image stays in the pool (like the box in ~/.vagrant.d) until `vagrant box remove`
  # and `virsh vol-delete`; the VM's own disk must be gone.
  if $virsh vol-list default | grep -v _vagrant_box_image_ | grep -q '\.img'; then echo "a VM disk is left"; return 1; fi
}

# ACCEPTANCE_SKIP_ADD=1: the box is already added (a re-run)
[ -n "${ACCEPTANCE_SKIP_ADD:-}" ] || step "box add" vagrant box add --force --provider libvirt "$MPTCPLAB_BOX_URL"
# vagrant-libvirt 0.11 waits for the VM's DHCP lease at most 300 tries (~17 min), whatever
# boot_timeout says; a first boot in software emulation on a loaded host can take longer. Then
# the VM is kept (--no-destroy-on-error) and `vagrant reload` boots it again (a second boot has
# no first-boot work) through the whole start sequence: sync, wait, forward ports, provision.
up() {
  # --provision: a VM kept from an earlier attempt is provisioned again (a fresh one is anyway).
  vagrant up --provider=libvirt --no-destroy-on-error --provision && return 0
  echo "=== vagrant up failed (above: in software emulation, usually vagrant-libvirt's DHCP wait); the VM is kept: vagrant reload"
  vagrant reload
}
step "vagrant up (libvirt)" up
step "doctor" vagrant ssh -c 'sudo mptcplab doctor'
record "example" vagrant ssh -c 'sudo mptcplab example'
step "jupyterlab answers" jupyter_answers
step "screenshot" screenshot
step "provision again" vagrant provision
step "destroy" vagrant destroy -f
step "nothing left" nothing_left
echo; echo "=== box"; ls -l "$boxdir"; cat "$boxdir/metadata.json"
echo; echo "=== timings"; cat "$out/timings.txt"
# The boot as the VM's console saw it: kernel version and the first and last systemd messages.
grep -a -E "Linux version|Reached target|login:" "$MPTCPLAB_LIBVIRT_CONSOLE_LOG" | head -20 >"$out/console-excerpt.txt"
