#!/usr/bin/env bash
# Provision the mptcplab VM (Ubuntu 24.04; the package and module steps also run on Debian 12).
# Idempotent: every step checks before it changes, so `vagrant provision` can be re-run at will.
#
#   provision.sh                      all steps
#   provision.sh --only packages ...  just these steps (kernel packages modules sysctls kit jupyter doctor)
#   provision.sh --check              change nothing; report what is missing, exit 1 if anything is
#   provision.sh --list-packages      print the apt packages for this distribution and kernel
#   provision.sh --image              inside a disk image's chroot (vagrant/box/build.sh): install and
#                                     write configuration, but touch no running kernel or service
#
# Environment: MPTCPLAB_SRC (the repo, default /vagrant), MPTCPLAB_VENV (/opt/mptcplab/venv),
# MPTCPLAB_USER (vagrant), MPTCPLAB_JUPYTER_PORT (8888), MPTCPLAB_JUPYTER_TOKEN (mptcplab),
# MPTCPLAB_ETC (/etc; tests point it elsewhere), MPTCPLAB_APT_UPDATE (auto|always|never),
# MPTCPLAB_JUPYTER_DIR (what JupyterLab serves; default MPTCPLAB_SRC), MPTCPLAB_OS_ID (ubuntu|debian:
# the distribution --list-packages answers for; default this machine's), MPTCPLAB_CA_BUNDLE (a PEM
# file pip trusts instead of its own CAs: a network whose proxy inspects TLS; the Vagrantfile copies
# the host's MPTCPLAB_CA_BUNDLE in), MPTCPLAB_KERNEL_DEB (the kit's box kernel, a linux-image .deb
# installed as GRUB's default; default: the one in $MPTCPLAB_SRC/build/box/kernel-ARCH/, where
# `vagrant/box/build.sh --stage kernel` leaves it, if there is one).
set -euo pipefail

SRC=${MPTCPLAB_SRC:-/vagrant}
VENV=${MPTCPLAB_VENV:-/opt/mptcplab/venv}
RUN_USER=${MPTCPLAB_USER:-vagrant}
PORT=${MPTCPLAB_JUPYTER_PORT:-8888}
TOKEN=${MPTCPLAB_JUPYTER_TOKEN:-mptcplab}
ETC=${MPTCPLAB_ETC:-/etc}
APT_UPDATE=${MPTCPLAB_APT_UPDATE:-auto}
JUPYTER_DIR=${MPTCPLAB_JUPYTER_DIR:-$SRC}
ALL_STEPS="kernel packages modules sysctls kit jupyter doctor"
CHECK=0
IMAGE=0
STEPS=""
export DEBIAN_FRONTEND=noninteractive
if [ -s "${MPTCPLAB_CA_BUNDLE:-}" ]; then export PIP_CERT=$MPTCPLAB_CA_BUNDLE; fi

say() { printf '\033[1m[mptcplab provision]\033[0m %s\n' "$*"; }
die() { printf '\n\033[1;31m[mptcplab provision] FAILED: %s\033[0m\n\n' "$*" >&2; exit 1; }
packages_list() {
  echo iproute2 iputils-ping ethtool tcpdump tshark iperf3 mptcpd jq git \
       python3 python3-venv python3-dev build-essential clang llvm libbpf-dev
  if is_ubuntu; then
    # bpftool ships in linux-tools for the running kernel; sch_netem and mptcp_diag in -extra.
    echo linux-tools-common "linux-tools-$kernel" "linux-modules-extra-$kernel"
  else
    echo bpftool
  fi
}

missing=0
need() { # need DESCRIPTION COMMAND...: in --check mode report, else fail loudly
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then say "ok: $what"; return 0; fi
  if [ "$CHECK" = 1 ]; then say "MISSING: $what"; missing=1; return 1; fi
  die "$what"
}

while [ $# -gt 0 ]; do
  case $1 in
    --check) CHECK=1 ;;
    --only) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do STEPS="$STEPS $1"; shift; done; continue ;;
    --list-packages) LIST=1 ;;
    --image) IMAGE=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (try --help)" ;;
  esac
  shift
done
[ "$IMAGE" = 1 ] && [ "$CHECK" = 1 ] && die "--image and --check exclude each other"
STEPS=${STEPS:-$ALL_STEPS}
is_ubuntu() {
  if [ -n "${MPTCPLAB_OS_ID:-}" ]; then [ "$MPTCPLAB_OS_ID" = ubuntu ]; else grep -q '^ID=ubuntu' /etc/os-release; fi
}
kernel=$(uname -r)
if [ "${LIST:-0}" = 1 ]; then packages_list; exit 0; fi
[ "$(id -u)" = 0 ] || die "run as root (vagrant does; by hand: sudo $0)"


# The kit's box kernel (vagrant/box/kernel.config: Debian's 6.12 with the paper's minRTT scheduler,
# which Lab 1's paper point needs) beside the distribution's, which stays in GRUB's menu. The box
# build runs this step in its chroot; the Lima VM and a plain Debian box at provisioning.
installed() { # installed PACKAGE VERSION
  [ "$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null)" = "$2" ]
}
step_kernel() {
  local deb=${MPTCPLAB_KERNEL_DEB:-} dir release version default changed=0
  local conf=$ETC/default/grub.d/mptcplab-kernel.cfg
  dir=$SRC/build/box/kernel-$(dpkg --print-architecture)
  [ -n "$deb" ] || deb=$(find "$dir" -maxdepth 1 -name 'linux-image-*.deb' 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then say "kernel: $kernel stays (no kit kernel package in $dir/ to install)"; return 0; fi
  [ -f "$deb" ] || die "MPTCPLAB_KERNEL_DEB=$deb: no such file"
  if is_ubuntu; then say "kernel: $kernel, Ubuntu's (the kit's $deb is built for Debian)"; return 0; fi
  release=$(dpkg-deb -f "$deb" Package); release=${release#linux-image-}
  version=$(dpkg-deb -f "$deb" Version)
  if [ "$CHECK" = 0 ]; then
    # GRUB's default named by its menu title, which unlike an entry's id holds no disk UUID (a box's
    # disk gets its own only later, in build.sh's image stage).
    default="GRUB_DEFAULT=\"Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux $release\""
    if [ "$(cat "$conf" 2>/dev/null)" != "$default" ]; then
      mkdir -p "$ETC/default/grub.d"; echo "$default" >"$conf"; changed=1
    fi
    if installed "linux-image-$release" "$version"; then say "kernel: the kit's $release ($version) already installed"
    else
      say "kernel: installing the kit's $release ($version) from $deb"
      dpkg -i "$deb"; changed=1  # its postinst makes the initramfs (and in a running system, GRUB's menu)
    fi
    # A chroot has no GRUB menu yet (build.sh's image stage writes it); a running system's is
    # written again for the default above, which the package's own update-grub may have preceded.
    if [ "$IMAGE" = 0 ] && [ "$changed" = 1 ]; then
      command -v update-grub >/dev/null || die "no update-grub: the kit's kernel cannot be made GRUB's default"
      update-grub
    fi
  fi
  need "the kit's kernel $release ($version) installed" installed "linux-image-$release" "$version" || true
  if [ "$IMAGE" = 0 ] && [ "$kernel" != "$release" ] && installed "linux-image-$release" "$version"; then
    say "kernel: the kit's $release boots at the VM's next start (running $kernel): \`vagrant reload\`, or under Lima \`limactl stop mptcplab && limactl start mptcplab\`"
  fi
}

step_packages() {
  local pkgs absent=()
  # packages_list prints more than one line: read them all (`read` alone took the first, so
  # bpftool, and on Ubuntu linux-tools and linux-modules-extra, were never installed).
  read -r -a pkgs <<<"$(packages_list | tr '\n' ' ')"
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || absent+=("$p")
  done
  if [ "$CHECK" = 1 ]; then
    if [ ${#absent[@]} -eq 0 ]; then say "ok: all ${#pkgs[@]} packages installed"
    else say "MISSING packages: ${absent[*]}"; missing=1; fi
    return 0
  fi
  if [ ${#absent[@]} -eq 0 ]; then say "packages: all ${#pkgs[@]} already installed"; return 0; fi
  # tshark asks whether non-root users may capture; answer before apt can ask.
  echo 'wireshark-common wireshark-common/install-setuid boolean true' | debconf-set-selections
  local stamp=/var/lib/apt/periodic/update-success-stamp lists_age=999999
  [ -e "$stamp" ] && lists_age=$(( $(date +%s) - $(stat -c %Y "$stamp") ))
  if [ "$APT_UPDATE" = always ] || { [ "$APT_UPDATE" = auto ] && [ "$lists_age" -gt 21600 ]; }; then
    apt-get update -q
  fi
  say "installing: ${absent[*]}"
  if apt-get install -y -q --no-install-recommends "${absent[@]}"; then return 0; fi
  # A box whose kernel is newer than its package lists has no matching -extra/-tools yet.
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${absent[@]}" \
    || die "apt-get could not install: ${absent[*]} (is the box's kernel $kernel still in the archive? try \`vagrant box update\`)"
}

step_modules() {
  local conf=$ETC/modules-load.d/mptcplab.conf
  if [ "$CHECK" = 0 ]; then
    mkdir -p "$ETC/modules-load.d"
    printf '# mptcplab: qdiscs for emulated links, MPTCP socket diagnostics for ss -M\nsch_netem\nsch_tbf\nsch_htb\nmptcp_diag\n' >"$conf"
    if [ "$IMAGE" = 1 ]; then say "image: modules load at boot; \`mptcplab doctor\` proves netem in the VM"; return 0; fi
    for m in sch_netem sch_tbf sch_htb mptcp_diag; do
      modprobe "$m" 2>/dev/null || say "modprobe $m failed (fine if it is built in)"
    done
  fi
  need "modules persisted in $conf" test -s "$conf" || true
  # The real test: can a netem qdisc be created? The kit's own probe (mptcplab.core.kernel: a qdisc in
  # a throwaway namespace), run from its source with the system's python3, as the kit is installed
  # only by a later step.
  local kit=$SRC/src rc=0
  [ -f "$kit/mptcplab/core/kernel.py" ] || kit=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/src
  PYTHONPATH=$kit python3 -c 'import sys; from mptcplab.core import kernel; sys.exit(0 if kernel.netem_usable() else 3)' || rc=$?
  if [ "$rc" = 0 ]; then say "ok: netem qdisc created in a throwaway namespace"; return 0; fi
  [ "$rc" = 3 ] || die "the kit's netem probe did not run (python3 and the kit's source at $SRC/src?)"
  local why="this kernel ($kernel) cannot create a netem qdisc, so Labs 1 and 3 cannot emulate delay and loss."
  if is_ubuntu; then why="$why Install linux-modules-extra-$kernel and run \`modprobe sch_netem\`"
  else why="$why Run \`modprobe sch_netem\`; where modules cannot be loaded use the UML kernel (\`mptcplab uml build\`)"; fi
  if [ "$CHECK" = 1 ]; then say "MISSING: $why"; missing=1; else die "$why"; fi
}

step_sysctls() {
  local conf=$ETC/sysctl.d/90-mptcplab.conf
  if [ "$CHECK" = 0 ]; then
    mkdir -p "$ETC/sysctl.d"
    cat >"$conf" <<'CONF'
# mptcplab: MPTCP on, buffers large enough for the Lab 1 send-buffer sweep, no cached metrics between runs
net.mptcp.enabled = 1
net.core.rmem_max = 67108864
net.core.wmem_max = 67108864
net.ipv4.tcp_rmem = 4096 131072 67108864
net.ipv4.tcp_wmem = 4096 16384 67108864
net.ipv4.tcp_no_metrics_save = 1
kernel.perf_event_paranoid = 1
CONF
    if [ "$IMAGE" = 1 ]; then say "image: sysctls apply at boot"; return 0; fi
    sysctl -q -p "$conf"
  fi
  need "net.mptcp.enabled = 1" grep -qx 1 /proc/sys/net/mptcp/enabled || true
}

step_kit() {
  [ -f "$SRC/pyproject.toml" ] || die "the kit is not at $SRC (is the synced folder mounted? \`vagrant reload\`)"
  if [ "$CHECK" = 0 ]; then
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    # The kit's box ships the venv with every dependency: then re-pointing the kit at $SRC needs no
    # network (--no-index). A plain box has none, and installs from PyPI.
    if "$VENV/bin/pip" install -q --no-index --no-build-isolation -e "${SRC}[notebooks]" 2>/dev/null; then
      say "kit: installed from $SRC with the venv's packages (offline)"
    else
      "$VENV/bin/pip" install -q --upgrade pip 'setuptools>=77'
      "$VENV/bin/pip" install -q -e "${SRC}[notebooks]"
    fi
    ln -sf "$VENV/bin/mptcplab" /usr/local/bin/mptcplab
    # Let the student run `mptcplab` and `jupyter` without activating the venv.
    mkdir -p "$ETC/profile.d"
    echo "export PATH=$VENV/bin:\$PATH" >"$ETC/profile.d/mptcplab.sh"
  fi
  need "mptcplab installed in $VENV" "$VENV/bin/mptcplab" --version || true
}

step_jupyter() {
  local unit=$ETC/systemd/system/mptcplab-jupyter.service
  if [ "$CHECK" = 0 ]; then
    mkdir -p "$ETC/systemd/system"
    cat >"$unit" <<UNIT
[Unit]
Description=JupyterLab for the mptcplab notebooks (forwarded to the host's localhost:$PORT)
After=network-online.target

[Service]
User=$RUN_USER
WorkingDirectory=$JUPYTER_DIR
Environment=PATH=$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=$VENV/bin/jupyter lab --no-browser --ip=0.0.0.0 --port=$PORT --ServerApp.token=$TOKEN --ServerApp.root_dir=$JUPYTER_DIR
# At boot the synced folder may not be there yet: retry until Vagrant has mounted or copied it.
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
    # JupyterLab 4 asks each new user, over the notebook, whether to fetch Jupyter's news: not in a
    # classroom VM. The announcements plugin is turned off for the kit's venv (idempotent).
    "$VENV/bin/jupyter" labextension disable --level=sys_prefix "@jupyterlab/apputils-extension:announcements" \
      >/dev/null 2>&1 || say "note: could not turn off JupyterLab's news prompt"
    if [ "$IMAGE" = 1 ]; then systemctl enable mptcplab-jupyter.service; return 0; fi
    systemctl daemon-reload
    systemctl enable mptcplab-jupyter.service
    systemctl restart mptcplab-jupyter.service
    sleep 3
  fi
  need "JupyterLab service running on port $PORT" systemctl is-active --quiet mptcplab-jupyter.service || true
}

step_doctor() {
  if [ "$IMAGE" = 1 ]; then say "image: doctor runs when the VM is provisioned"; return 0; fi
  [ "$CHECK" = 1 ] && [ ! -x "$VENV/bin/mptcplab" ] && { say "MISSING: mptcplab (doctor skipped)"; missing=1; return 0; }
  say "mptcplab doctor:"
  if ! "$VENV/bin/mptcplab" doctor; then
    if [ "$CHECK" = 1 ]; then missing=1; return 0; fi
    die "\`mptcplab doctor\` says a lab cannot run in this VM (see the MISSING lines above and their fixes)"
  fi
}

for s in $STEPS; do
  case " $ALL_STEPS " in *" $s "*) ;; *) die "unknown step $s (steps: $ALL_STEPS)" ;; esac
  say "== $s"
  "step_$s"
done
if [ "$CHECK" = 1 ] && [ "$missing" = 1 ]; then die "some checks failed (see MISSING above)"; fi
say "done: $STEPS"
if [ "$CHECK" = 0 ] && [[ " $STEPS " == *" jupyter "* ]]; then
  say "JupyterLab: http://localhost:$PORT/lab?token=$TOKEN   shell: vagrant ssh, then sudo mptcplab ..."
fi
