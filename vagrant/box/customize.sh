#!/usr/bin/env bash
# Runs inside the new root (mmdebstrap customize hook, chroot): make it a Vagrant base box and
# pre-provision the kit. Nothing here may touch the build host's kernel or services.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
# build.sh's copy of the build host's CA bundle (deleted after this script): pip trusts it here only.
if [ -s /tmp/build-ca.crt ]; then export PIP_CERT=/tmp/build-ca.crt; fi

# The kit, exactly as `vagrant up` provisions it, minus what needs the VM's own kernel running
# (modprobe, sysctl -p, starting services): provision.sh --image writes those to take effect at boot.
# A plain box (build.sh --plain) skips this: `vagrant up` provisions it from scratch.
if [ "${MPTCPLAB_BOX_PLAIN:-0}" = 1 ]; then
  rm -rf /opt/mptcplab
else
  MPTCPLAB_SRC=/opt/mptcplab/src MPTCPLAB_JUPYTER_DIR=/vagrant \
    bash /opt/mptcplab/src/vagrant/provision.sh --image
fi

# vagrant user: password "vagrant", passwordless sudo, Vagrant's published insecure keys (RSA for
# Vagrant < 2.4, ed25519 for newer); Vagrant replaces them with a per-machine key on first `up`.
id vagrant >/dev/null 2>&1 || useradd --create-home --uid 1000 --shell /bin/bash vagrant
echo vagrant:vagrant | chpasswd
echo 'vagrant ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/vagrant
chmod 0440 /etc/sudoers.d/vagrant
install -d -m 0700 -o vagrant -g vagrant /home/vagrant/.ssh
cat >/home/vagrant/.ssh/authorized_keys <<'KEYS'
ssh-rsa AAAAB3NzaC1yc2EAAAABIwAAAQEA6NF8iallvQVp22WDkTkyrtvp9eWW6A8YVr+kz4TjGYe7gHzIw+niNltGEFHzD8+v1I2YJ6oXevct1YeS0o9HZyN1Q9qgCgzUFtdOKLv6IedplqoPkcmF0aYet2PkEDo3MlTBckFXPITAMzF8dJSIFo9D8HfdOV0IAdx4O7PtixWKn5y2hMNG0zQPyUecp4pzC6kivAIhyfHilFR61RGL+GPXQ2MWZWFYbAGjyiYJnAmCP3NOTd0jMZEnDkbUvxhMmBYSdETk1rRgm+R4LOzFUGaHqHDLKLX+FIPKcF96hrucXzcWyLbIbEgE98OHlnVYCzRdK8jlqm8tehUc9c9WhQ== vagrant insecure public key
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN1YdxBpNlzxDqfJyw/QKow1F+wvG9hXGoqiysfJOn5Y vagrant insecure public key
KEYS
chown vagrant:vagrant /home/vagrant/.ssh/authorized_keys
chmod 0600 /home/vagrant/.ssh/authorized_keys
mkdir -p /vagrant && chown vagrant:vagrant /vagrant

# sshd: no DNS lookups (slow logins on NAT), host keys made per machine at first boot, not baked in.
printf 'UseDNS no\n' >/etc/ssh/sshd_config.d/vagrant.conf
rm -f /etc/ssh/ssh_host_*
cat >/etc/systemd/system/ssh-host-keys.service <<'UNIT'
[Unit]
Description=Generate this machine's SSH host keys (the box ships none)
Before=ssh.service ssh.socket
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
RequiredBy=ssh.service
UNIT
systemctl enable ssh-host-keys.service ssh.service

# Network: DHCP on whatever NIC the hypervisor gives (VirtualBox NAT, libvirt's default network).
cat >/etc/systemd/network/80-dhcp.network <<'NET'
[Match]
Name=en* eth*

[Network]
DHCP=yes
NET
systemctl enable systemd-networkd.service systemd-resolved.service
echo mptcplab >/etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\tmptcplab\n::1\tlocalhost ip6-localhost ip6-loopback\n' >/etc/hosts

# Serial console too (libvirt logs it; a headless boot can be debugged), short GRUB menu.
cat >/etc/default/grub.d/mptcplab.cfg <<'GRUB'
GRUB_TIMEOUT=1
GRUB_CMDLINE_LINUX_DEFAULT="console=tty0 console=ttyS0,115200n8 net.ifnames=0"
GRUB_TERMINAL="console serial"
GRUB_SERIAL_COMMAND="serial --speed=115200"
GRUB_DISABLE_OS_PROBER=true
GRUB
if [ "$(dpkg --print-architecture)" = arm64 ]; then
  sed -i 's/console=ttyS0,115200n8/console=ttyAMA0,115200n8/' /etc/default/grub.d/mptcplab.cfg
fi

# Do at build time what systemd would otherwise redo at first boot (ConditionNeedsUpdate: the
# linker cache, the journal catalogue, hwdb): minutes under software emulation.
ldconfig
journalctl --update-catalog 2>/dev/null || true
systemd-hwdb update 2>/dev/null || true
touch /etc/.updated /var/.updated

# A fresh machine-id per VM (DHCP client ids and journald depend on it).
: >/etc/machine-id
rm -f /var/lib/dbus/machine-id
apt-get clean
rm -rf /var/lib/apt/lists/* /root/.cache /var/tmp/*  # not /tmp: this script runs from there
