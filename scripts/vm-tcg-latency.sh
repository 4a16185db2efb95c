#!/bin/sh
# Where a QEMU TCG guest's own round-trip latency comes from: boot the stock kernel the way the
# kit's VM place does under TCG (vng, 1 vCPU, -cpu max,avx2=off: places/vm.py) and ping between two
# network namespaces over a veth pair with no qdisc, netem delay 0, netem delay 0 + rate 100mbit
# (the example's fast path), and netem 5 ms + 100mbit each way; once with the guest's default
# idle loop and once with idle=poll (a vCPU that never halts). Prints ping's summary per case.
# Usage: scripts/vm-tcg-latency.sh [KERNEL=/boot/vmlinuz-<newest>] [PINGS=60]
set -u
KERNEL=${1:-$(printf "%s\n" /boot/vmlinuz-* | sort -V | tail -1)}
PINGS=${2:-60}
VNG=${VNG:-$(command -v vng || echo "$(dirname "$0")/../.venv/bin/vng")}
PATH=$(dirname "$VNG"):$PATH  # vng runs virtme-run from its own directory
guest=$(mktemp /tmp/vm-tcg-latency.XXXXXX)
trap 'rm -f "$guest"' EXIT
cat > "$guest" <<GUEST
#!/bin/sh
echo "guest: \$(uname -r), clocksource \$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
ip netns add a; ip netns add b
ip link add va netns a type veth peer name vb netns b
ip -n a addr add 10.9.0.1/24 dev va; ip -n b addr add 10.9.0.2/24 dev vb
for ns in a b; do ip -n \$ns link set lo up; done
ip -n a link set va up; ip -n b link set vb up
p() { printf '%-26s ' "\$1"; ip netns exec a ping -q -c $PINGS -i 0.05 10.9.0.2 | tail -1; }
p "no qdisc"
tc -n a qdisc add dev va root netem delay 0ms; tc -n b qdisc add dev vb root netem delay 0ms
p "netem delay 0"
tc -n a qdisc change dev va root netem delay 0ms rate 100mbit; tc -n b qdisc change dev vb root netem delay 0ms rate 100mbit
p "netem delay 0, 100mbit"
tc -n a qdisc change dev va root netem delay 5ms rate 100mbit; tc -n b qdisc change dev vb root netem delay 5ms rate 100mbit
p "netem 5 ms each way, 100mbit"
GUEST
chmod +x "$guest"
echo "host: $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(qemu-system-x86_64 --version | head -1)"
for append in "" "idle=poll"; do
  echo "== guest idle: ${append:-default}"
  timeout 600 "$VNG" --run "$KERNEL" --user root --cpus 1 --memory 1024M --disable-kvm \
    --qemu-opts="-cpu max,avx2=off" ${append:+--append "$append"} --exec "$guest" 2>&1 | grep -v '^\['
done
