#!/bin/sh
# mptcplab topology 'lab1' (run e709fc)
set -e
# host snd
ip netns add mlab-e709fc-snd
ip -n mlab-e709fc-snd link set lo up
ip netns exec mlab-e709fc-snd sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec mlab-e709fc-snd sysctl -qw net.ipv4.conf.default.rp_filter=0
# host rcv
ip netns add mlab-e709fc-rcv
ip -n mlab-e709fc-rcv link set lo up
ip netns exec mlab-e709fc-rcv sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec mlab-e709fc-rcv sysctl -qw net.ipv4.conf.default.rp_filter=0
# the link emulator
ip netns add mlab-e709fc-emu
ip -n mlab-e709fc-emu link set lo up
ip netns exec mlab-e709fc-emu sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec mlab-e709fc-emu sysctl -qw net.ipv4.conf.default.rp_filter=0
# path fast: snd <-> emulator <-> rcv, one subnet 10.1.0.0/24
ip -n mlab-e709fc-emu link add br-fast type bridge
ip -n mlab-e709fc-emu link set br-fast up
ip link add fast netns mlab-e709fc-snd type veth peer name a-fast netns mlab-e709fc-emu
ip -n mlab-e709fc-emu link set a-fast master br-fast
ip -n mlab-e709fc-snd addr add 10.1.0.1/24 dev fast
ip -n mlab-e709fc-snd link set fast up
ip -n mlab-e709fc-emu link set a-fast up
ip netns exec mlab-e709fc-snd ethtool -K fast tso off gso off gro off
ip netns exec mlab-e709fc-emu ethtool -K a-fast tso off gso off gro off
ip link add fast netns mlab-e709fc-rcv type veth peer name b-fast netns mlab-e709fc-emu
ip -n mlab-e709fc-emu link set b-fast master br-fast
ip -n mlab-e709fc-rcv addr add 10.1.0.2/24 dev fast
ip -n mlab-e709fc-rcv link set fast up
ip -n mlab-e709fc-emu link set b-fast up
ip netns exec mlab-e709fc-rcv ethtool -K fast tso off gso off gro off
ip netns exec mlab-e709fc-emu ethtool -K b-fast tso off gso off gro off
# path fast, snd -> rcv: rate=100mbit,delay=0ms,queue=auto
tc -n mlab-e709fc-emu qdisc replace dev b-fast root netem rate 100mbit limit 100
# path fast, rcv -> snd: rate=100mbit,delay=0ms,queue=auto
tc -n mlab-e709fc-emu qdisc replace dev a-fast root netem rate 100mbit limit 100
# path slow: snd <-> emulator <-> rcv, one subnet 10.2.0.0/24
ip -n mlab-e709fc-emu link add br-slow type bridge
ip -n mlab-e709fc-emu link set br-slow up
ip link add slow netns mlab-e709fc-snd type veth peer name a-slow netns mlab-e709fc-emu
ip -n mlab-e709fc-emu link set a-slow master br-slow
ip -n mlab-e709fc-snd addr add 10.2.0.1/24 dev slow
ip -n mlab-e709fc-snd link set slow up
ip -n mlab-e709fc-emu link set a-slow up
ip netns exec mlab-e709fc-snd ethtool -K slow tso off gso off gro off
ip netns exec mlab-e709fc-emu ethtool -K a-slow tso off gso off gro off
ip link add slow netns mlab-e709fc-rcv type veth peer name b-slow netns mlab-e709fc-emu
ip -n mlab-e709fc-emu link set b-slow master br-slow
ip -n mlab-e709fc-rcv addr add 10.2.0.2/24 dev slow
ip -n mlab-e709fc-rcv link set slow up
ip -n mlab-e709fc-emu link set b-slow up
ip netns exec mlab-e709fc-rcv ethtool -K slow tso off gso off gro off
ip netns exec mlab-e709fc-emu ethtool -K b-slow tso off gso off gro off
# path slow, snd -> rcv: rate=100mbit,delay=40ms,queue=auto
tc -n mlab-e709fc-emu qdisc replace dev b-slow root netem delay 40ms rate 100mbit limit 992
# path slow, rcv -> snd: rate=100mbit,delay=40ms,queue=auto
tc -n mlab-e709fc-emu qdisc replace dev a-slow root netem delay 40ms rate 100mbit limit 992
ip netns exec mlab-e709fc-snd sysctl -qw net.ipv4.tcp_no_metrics_save=1
ip netns exec mlab-e709fc-snd sysctl -qw 'net.ipv4.tcp_wmem=4096 16384 4194304'
ip netns exec mlab-e709fc-rcv sysctl -qw net.ipv4.tcp_no_metrics_save=1
# receiver: accepts at most 1 extra subflow(s)
ip -n mlab-e709fc-rcv mptcp limits set subflow 1 add_addr_accepted 0
# sender: opens at most 1 extra subflow(s), ignores announced addresses
ip -n mlab-e709fc-snd mptcp limits set subflow 1 add_addr_accepted 0
# sender opens a subflow from 10.2.0.1 over slow
ip -n mlab-e709fc-snd mptcp endpoint add 10.2.0.1 dev slow subflow
