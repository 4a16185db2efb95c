#!/bin/sh
# mptcplab topology 'lab1' (run 576fce)
set -e
# the kernel's net.core.wmem_max is 212992: this network needs 4194304
sysctl -qw net.core.wmem_max=4194304
# host snd
ip netns add mlab-576fce-snd
ip -n mlab-576fce-snd link set lo up
ip netns exec mlab-576fce-snd sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec mlab-576fce-snd sysctl -qw net.ipv4.conf.default.rp_filter=0
# host rcv
ip netns add mlab-576fce-rcv
ip -n mlab-576fce-rcv link set lo up
ip netns exec mlab-576fce-rcv sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec mlab-576fce-rcv sysctl -qw net.ipv4.conf.default.rp_filter=0
# the link emulator
ip netns add mlab-576fce-emu
ip -n mlab-576fce-emu link set lo up
ip netns exec mlab-576fce-emu sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec mlab-576fce-emu sysctl -qw net.ipv4.conf.default.rp_filter=0
# path fast: snd <-> emulator <-> rcv, one subnet 10.1.0.0/24
ip -n mlab-576fce-emu link add br-fast type bridge
ip -n mlab-576fce-emu link set br-fast up
ip link add fast netns mlab-576fce-snd type veth peer name a-fast netns mlab-576fce-emu
ip -n mlab-576fce-emu link set a-fast master br-fast
ip -n mlab-576fce-snd addr add 10.1.0.1/24 dev fast
ip -n mlab-576fce-snd link set fast up
ip -n mlab-576fce-emu link set a-fast up
ip netns exec mlab-576fce-snd ethtool -K fast tso off gso off gro off
ip netns exec mlab-576fce-emu ethtool -K a-fast tso off gso off gro off
ip link add fast netns mlab-576fce-rcv type veth peer name b-fast netns mlab-576fce-emu
ip -n mlab-576fce-emu link set b-fast master br-fast
ip -n mlab-576fce-rcv addr add 10.1.0.2/24 dev fast
ip -n mlab-576fce-rcv link set fast up
ip -n mlab-576fce-emu link set b-fast up
ip netns exec mlab-576fce-rcv ethtool -K fast tso off gso off gro off
ip netns exec mlab-576fce-emu ethtool -K b-fast tso off gso off gro off
# path fast, snd -> rcv: rate=100mbit,delay=0ms,queue=auto
tc -n mlab-576fce-emu qdisc replace dev b-fast root netem rate 100mbit limit 100
# path fast, rcv -> snd: rate=100mbit,delay=0ms,queue=auto
tc -n mlab-576fce-emu qdisc replace dev a-fast root netem rate 100mbit limit 100
# path slow: snd <-> emulator <-> rcv, one subnet 10.2.0.0/24
ip -n mlab-576fce-emu link add br-slow type bridge
ip -n mlab-576fce-emu link set br-slow up
ip link add slow netns mlab-576fce-snd type veth peer name a-slow netns mlab-576fce-emu
ip -n mlab-576fce-emu link set a-slow master br-slow
ip -n mlab-576fce-snd addr add 10.2.0.1/24 dev slow
ip -n mlab-576fce-snd link set slow up
ip -n mlab-576fce-emu link set a-slow up
ip netns exec mlab-576fce-snd ethtool -K slow tso off gso off gro off
ip netns exec mlab-576fce-emu ethtool -K a-slow tso off gso off gro off
ip link add slow netns mlab-576fce-rcv type veth peer name b-slow netns mlab-576fce-emu
ip -n mlab-576fce-emu link set b-slow master br-slow
ip -n mlab-576fce-rcv addr add 10.2.0.2/24 dev slow
ip -n mlab-576fce-rcv link set slow up
ip -n mlab-576fce-emu link set b-slow up
ip netns exec mlab-576fce-rcv ethtool -K slow tso off gso off gro off
ip netns exec mlab-576fce-emu ethtool -K b-slow tso off gso off gro off
# path slow, snd -> rcv: rate=100mbit,delay=40ms,queue=auto
tc -n mlab-576fce-emu qdisc replace dev b-slow root netem delay 40ms rate 100mbit limit 992
# path slow, rcv -> snd: rate=100mbit,delay=40ms,queue=auto
tc -n mlab-576fce-emu qdisc replace dev a-slow root netem delay 40ms rate 100mbit limit 992
ip netns exec mlab-576fce-snd sysctl -qw net.ipv4.tcp_no_metrics_save=1
ip netns exec mlab-576fce-snd sysctl -qw net.ipv4.tcp_min_tso_segs=64
ip netns exec mlab-576fce-snd sysctl -qw 'net.ipv4.tcp_wmem=4096 16384 4194304'
ip netns exec mlab-576fce-snd sysctl -qw net.mptcp.scheduler=minrtt
ip netns exec mlab-576fce-snd sysctl -qw net.mptcp.minrtt_rp=1
ip netns exec mlab-576fce-rcv sysctl -qw net.ipv4.tcp_no_metrics_save=1
ip netns exec mlab-576fce-rcv sysctl -qw net.ipv4.tcp_min_tso_segs=64
# receiver: accepts at most 1 extra subflow(s)
ip -n mlab-576fce-rcv mptcp limits set subflow 1 add_addr_accepted 0
# sender: opens at most 1 extra subflow(s), ignores announced addresses
ip -n mlab-576fce-snd mptcp limits set subflow 1 add_addr_accepted 0
# sender opens a subflow from 10.2.0.1 over slow
ip -n mlab-576fce-snd mptcp endpoint add 10.2.0.1 dev slow subflow
