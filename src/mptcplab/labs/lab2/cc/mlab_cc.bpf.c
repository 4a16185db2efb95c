// SPDX-License-Identifier: GPL-2.0
/*
 * mptcplab: multipath congestion controls as BPF struct_ops TCP congestion controls.
 *
 * One source, compiled once per algorithm (-DMLAB_ALGO=..., -DMLAB_NAME=...), so each
 * algorithm is its own `tcp_congestion_ops` that can be loaded and removed alone.
 *
 * Upstream Linux MPTCP has no coupled congestion control: every subflow is an ordinary TCP
 * socket with its own CC. These programs couple the subflows themselves: each subflow's CC
 * reads its siblings' cwnd and smoothed RTT through the subflow context (icsk_ulp_data ->
 * mptcp_subflow_context -> conn -> mptcp_sock -> conn_list) with read-only, lock-free casts,
 * so sibling values may be a few ACKs stale. A CC writes only its own socket's window.
 *
 * Increases are kept in a private fixed-point accumulator (1 packet = 1 << FP) instead of
 * tcp_cong_avoid_ai(), whose integer divisor would round LIA's small increases badly.
 * The Python reference of the same rules is mptcplab/ccref.py; keep them in step:
 * tests/test_cc_differential.py replays a recorded trace of these programs through it.
 *
 * Recording: every callback can write one event (its inputs, the sibling values it read, the
 * window it set) into the array map `mlab_events` while `mlab_ctl.on` is set. The map has
 * MLAB_EVENTS slots: 1 in the programs the labs load (recording costs nothing there), more in
 * the recording build (`mptcplab cc record`, mptcplab/cc/loader.py). The code is the same.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

#define ALGO_UNCOUPLED 0
#define ALGO_EWTCP 1
#define ALGO_COUPLED 2
#define ALGO_LIA 3
#define ALGO_CS218 4
#define ALGO_LIA_REPORT 5   /* the report's RTT compensator: a = 1/sqrt(n) in place of LIA's alpha */
#define ALGO_CS218_REPORT 6 /* CS218 on that rule */

#ifndef MLAB_ALGO
#error "compile with -DMLAB_ALGO=<0..6> -DMLAB_NAME=<struct_ops name>"
#endif

#define FP 20                 /* accumulator: 1 packet = 1 << FP */
#define MAX_SUBFLOWS 8        /* siblings looked at; MPTCP's own default limit is far lower */
#define CS218_MIN_ACKS 5      /* delay window once more than 5 packets were acked since the last loss */
#define MAX_RTT_US (1U << 21) /* clamp: keeps the LIA products inside 64 bits */
#define MAX_WND (1U << 16)
#define TCP_ESTABLISHED_STATE 1
#ifndef MLAB_EVENTS
#define MLAB_EVENTS 1
#endif

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* Per-socket state, lives in icsk_ca_priv (104 bytes available). */
struct mlab_ca {
	__u64 acc;         /* window increase not yet applied, in 1/2^FP packets */
	__u32 ack_count;   /* CS218 "ackCount": packets acked in congestion avoidance since the last loss */
	__u32 last_rtt_us; /* last RTT sample (CS218 "Last Measured RTT") */
	__u32 best_rtt_us; /* smallest RTT sample so far (CS218 "Best RTT") */
	__u32 loss_cwnd;
	__u32 prior_ack_count; /* ack_count when the last loss reset it: an undo gives it back */
	__u32 id;              /* this socket's number in recorded events */
};

/* One recorded callback (see the header comment). */
enum { EV_INIT = 1, EV_RTT = 2, EV_ACK = 3, EV_LOSS = 4, EV_UNDO = 5 };
struct mlab_event {
	__u64 t_ns;
	__u64 acc;        /* accumulator after the event */
	__u64 inc;        /* ACK: increase per packet applied, 1/2^FP packets */
	__u32 sock;       /* mlab_ca.id */
	__u32 kind;       /* EV_* */
	__u32 saddr;      /* INIT: the socket's local IPv4 address (network order) */
	__u32 acked;      /* ACK: packets the kernel passed in; RTT: the sample in µs; UNDO: prior_cwnd */
	__u32 limited;    /* ACK: cwnd-limited (else the window must not grow) */
	__u32 cwnd;       /* snd_cwnd before the callback */
	__u32 ssthresh;   /* snd_ssthresh before the callback */
	__u32 out;        /* ACK: snd_cwnd after; LOSS: the ssthresh returned; UNDO: the cwnd returned */
	__u32 ack_count;  /* state after the event */
	__u32 best_rtt_us;
	__u32 last_rtt_us;
	__u32 n;          /* ACK/LOSS: subflows in the coupling (this one included), see subflows() */
	__u32 self;       /* ... index of this socket among them */
	__u32 no_rtt;     /* ... established siblings left out: no RTT sample yet */
	__u32 w[MAX_SUBFLOWS];   /* ... their snd_cwnd */
	__u32 rtt[MAX_SUBFLOWS]; /* ... their srtt in µs as read */
};
struct mlab_ctl {
	__u32 on;      /* record while non-zero */
	__u32 next;    /* next free slot */
	__u32 dropped; /* events that found the map full */
	__u32 pad;
};
/* Both maps are mmapable: the loader reads and steers them through a memory map of each. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MLAB_EVENTS);
	__type(key, __u32);
	__type(value, struct mlab_event);
} mlab_events SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mlab_ctl);
} mlab_ctl SEC(".maps");

/* Counters readable with `bpftool map dump` (the object's .bss): evidence that coupling works. */
__u64 mlab_acks = 0;         /* congestion-avoidance ACKs handled */
__u64 mlab_coupled_acks = 0; /* ... of which saw at least one sibling subflow */
__u64 mlab_dwnd_acks = 0;    /* ... of which added the CS218 delay window */
__u64 mlab_losses = 0;       /* ssthresh calls (fast retransmit or RTO) */
__u32 mlab_max_subflows = 0; /* most subflows seen on one connection */
__u32 mlab_sockets = 0;      /* sockets initialised (numbers them for recorded events) */

static __always_inline struct tcp_sock *tcp_of(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct mlab_ca *ca_of(const struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline __u32 clamp_u32(__u64 v, __u32 lo, __u32 hi)
{
	return v < lo ? lo : (v > hi ? hi : (__u32)v);
}

static __always_inline struct mlab_event *ev_begin(struct sock *sk, __u32 kind)
{
	__u32 zero = 0, slot;
	struct mlab_ctl *ctl = bpf_map_lookup_elem(&mlab_ctl, &zero);
	struct mlab_event *ev;

	if (!ctl || !ctl->on)
		return NULL;
	slot = __sync_fetch_and_add(&ctl->next, 1);
	ev = bpf_map_lookup_elem(&mlab_events, &slot);
	if (!ev) {
		__sync_fetch_and_add(&ctl->dropped, 1);
		return NULL;
	}
	__builtin_memset(ev, 0, sizeof(*ev)); /* a slot keeps the previous recording's event */
	ev->t_ns = bpf_ktime_get_ns();
	ev->sock = ca_of(sk)->id;
	ev->kind = kind;
	ev->cwnd = tcp_of(sk)->snd_cwnd;
	ev->ssthresh = tcp_of(sk)->snd_ssthresh;
	return ev;
}

static __always_inline void ev_end(struct mlab_event *ev, struct mlab_ca *ca)
{
	if (!ev)
		return;
	ev->acc = ca->acc;
	ev->ack_count = ca->ack_count;
	ev->best_rtt_us = ca->best_rtt_us;
	ev->last_rtt_us = ca->last_rtt_us;
}

/* The subflows that take part in the coupling: cwnd and smoothed RTT (µs) of each established
 * one with an RTT sample, and always this socket (at *self, its RTT clamped to >= 1 µs); returns
 * how many (1 for plain TCP or when the list cannot be read). A subflow that just joined has
 * srtt 0, which would dominate LIA's max_i w_i/rtt_i^2; it is left out (and counted in
 * *no_rtt) until its first sample, as the out-of-tree Linux MPTCP's mptcp_ccc_sk_can_send() does. */
static __always_inline int subflows(struct sock *sk, __u32 *w, __u32 *rtt, int *self, __u32 *no_rtt)
{
	struct tcp_sock *tp = tcp_of(sk);
	struct mptcp_subflow_context *sf, *pos;
	struct mptcp_sock *msk;
	struct list_head *head, *next;
	struct tcp_sock *t;
	int n = 0, i, self_seen = 0;

	if (tp->is_mptcp) {
		sf = bpf_rdonly_cast(((struct inet_connection_sock *)sk)->icsk_ulp_data,
				     bpf_core_type_id_kernel(struct mptcp_subflow_context));
		msk = sf ? bpf_rdonly_cast(sf->conn, bpf_core_type_id_kernel(struct mptcp_sock)) : NULL;
		if (msk) {
			head = &msk->conn_list;
			next = msk->conn_list.next;
			for (i = 0; i < MAX_SUBFLOWS; i++) {
				if (!next || (unsigned long)next == (unsigned long)head)
					break;
				/* `node` is the first member of mptcp_subflow_context */
				pos = bpf_rdonly_cast(next, bpf_core_type_id_kernel(struct mptcp_subflow_context));
				next = pos->node.next;
				if ((unsigned long)pos->tcp_sock == (unsigned long)sk) {
					self_seen = 1;
					*self = n & (MAX_SUBFLOWS - 1);
					w[n & (MAX_SUBFLOWS - 1)] = clamp_u32(tp->snd_cwnd, 1, MAX_WND);
					rtt[n & (MAX_SUBFLOWS - 1)] = clamp_u32(tp->srtt_us >> 3, 1, MAX_RTT_US);
					n++;
					continue;
				}
				t = bpf_rdonly_cast(pos->tcp_sock, bpf_core_type_id_kernel(struct tcp_sock));
				if (!t || t->inet_conn.icsk_inet.sk.__sk_common.skc_state != TCP_ESTABLISHED_STATE)
					continue;
				if (!t->srtt_us) {
					(*no_rtt)++;
					continue;
				}
				w[n & (MAX_SUBFLOWS - 1)] = clamp_u32(t->snd_cwnd, 1, MAX_WND);
				rtt[n & (MAX_SUBFLOWS - 1)] = clamp_u32(t->srtt_us >> 3, 1, MAX_RTT_US);
				n++;
			}
		}
	}
	if (!self_seen) { /* plain TCP, or a subflow not (or no longer) on the list */
		if (n >= MAX_SUBFLOWS)
			n = MAX_SUBFLOWS - 1;
		*self = n & (MAX_SUBFLOWS - 1);
		w[n & (MAX_SUBFLOWS - 1)] = clamp_u32(tp->snd_cwnd, 1, MAX_WND);
		rtt[n & (MAX_SUBFLOWS - 1)] = clamp_u32(tp->srtt_us >> 3, 1, MAX_RTT_US);
		n++;
	}
	return n;
}

/* The coupling's inputs, as subflows() read them, into a recorded event (no-op when not recording). */
static __always_inline void record_subflows(struct mlab_event *ev, int n, int self, __u32 no_rtt,
					    const __u32 *w, const __u32 *rtt)
{
	int i;

	if (!ev)
		return;
	ev->n = n;
	ev->self = self;
	ev->no_rtt = no_rtt;
	for (i = 0; i < MAX_SUBFLOWS; i++) {
		ev->w[i] = w[i];
		ev->rtt[i] = rtt[i];
	}
}

/* 1/sqrt(n) in 1/1024 units, n = 1..8 (EWTCP's weight a). */
static __always_inline __u64 inv_sqrt_1024(int n)
{
	switch (n) {
	case 1: return 1024;
	case 2: return 724;
	case 3: return 591;
	case 4: return 512;
	case 5: return 458;
	case 6: return 418;
	case 7: return 387;
	default: return 362;
	}
}

/* LIA (RFC 6356) increase per acked packet, in 1/2^FP packets:
 *   min(alpha / w_total, 1 / w_self),  alpha / w_total = max_i(w_i/rtt_i^2) / (sum_i w_i/rtt_i)^2.
 * With k the subflow maximising w_i/rtt_i^2 and S = sum_i w_i * rtt_k / rtt_i this is w_k / S^2. */
static __always_inline __u64 lia_increase(int n, __u32 *w, __u32 *rtt, __u32 w_self)
{
	__u64 s = 0, t, inc, reno;
	int i, k = 0;

	for (i = 1; i < MAX_SUBFLOWS; i++) {
		if (i >= n)
			break;
		/* w_i/rtt_i^2 > w_k/rtt_k^2 <=> w_i*rtt_k^2 > w_k*rtt_i^2 (both < 2^58) */
		if ((__u64)w[i] * rtt[k & 7] * rtt[k & 7] > (__u64)w[k & 7] * rtt[i] * rtt[i])
			k = i;
	}
	for (i = 0; i < MAX_SUBFLOWS; i++) {
		if (i >= n)
			break;
		s += (((__u64)w[i] * rtt[k & 7]) << 10) / rtt[i]; /* S in 1/1024 packets */
	}
	if (s < 1024)
		s = 1024;
	t = ((__u64)w[k & 7] << 30) / s; /* w_k * 2^20 / S, S in packets */
	inc = (t << 10) / s;             /* w_k * 2^FP / S^2 */
	reno = (1ULL << FP) / w_self;
	return inc < reno ? inc : reno;
}

/* The report's RTT compensator (its Sec. 1), in 1/2^FP packets: min(a / w_total, 1 / w_self) with
 * a = 1/sqrt(n), EWTCP's weight. RTTs play no part; for n equal paths it is sqrt(n) times LIA's. */
static __always_inline __u64 report_increase(int n, __u64 total, __u32 w_self)
{
	__u64 inc = ((1ULL << FP) * inv_sqrt_1024(n) >> 10) / (total ? total : 1);
	__u64 reno = (1ULL << FP) / w_self;

	return inc < reno ? inc : reno;
}

/* Increase of this subflow's window per acked packet, in 1/2^FP packets; `acked` packets were
 * acked in congestion avoidance by this ACK. */
static __always_inline __s64 increase(struct sock *sk, struct mlab_ca *ca, __u32 acked, struct mlab_event *ev)
{
	struct tcp_sock *tp = tcp_of(sk);
	__u32 w[MAX_SUBFLOWS] = {}, rtt[MAX_SUBFLOWS] = {};
	__u32 w_self = clamp_u32(tp->snd_cwnd, 1, MAX_WND);
	__u64 total = 0, inc;
	int n, i, self = 0;
	__u32 no_rtt = 0;

	n = subflows(sk, w, rtt, &self, &no_rtt);
	record_subflows(ev, n, self, no_rtt, w, rtt);
	if (n > 1)
		__sync_fetch_and_add(&mlab_coupled_acks, 1);
	if ((__u32)n > mlab_max_subflows)
		mlab_max_subflows = n;
	for (i = 0; i < MAX_SUBFLOWS; i++) {
		if (i >= n)
			break;
		total += w[i];
	}

	switch (MLAB_ALGO) {
	case ALGO_EWTCP: /* a / w_r, a = 1/sqrt(n) */
		return ((1ULL << FP) * inv_sqrt_1024(n) >> 10) / w_self;
	case ALGO_COUPLED: /* 1 / w_total */
		return (1ULL << FP) / (total ? total : 1);
	case ALGO_LIA:
		return lia_increase(n, w, rtt, w_self);
	case ALGO_LIA_REPORT:
		return report_increase(n, total, w_self);
	case ALGO_CS218:
	case ALGO_CS218_REPORT:
		/* LIA increase (or the report's rule), plus DWND = that increase * best_rtt / last_rtt
		 * once more than CS218_MIN_ACKS packets were acked since the last loss (this ACK's included). */
		inc = MLAB_ALGO == ALGO_CS218 ? lia_increase(n, w, rtt, w_self) : report_increase(n, total, w_self);
		ca->ack_count += acked;
		if (ca->ack_count > CS218_MIN_ACKS && ca->last_rtt_us) {
			inc += inc * ca->best_rtt_us / ca->last_rtt_us;
			__sync_fetch_and_add(&mlab_dwnd_acks, 1);
		}
		return inc;
	default: /* uncoupled Reno: 1 / w_r */
		return (1ULL << FP) / w_self;
	}
}

SEC("struct_ops")
void BPF_PROG(mlab_init, struct sock *sk)
{
	struct mlab_ca *ca = ca_of(sk);

	struct mlab_event *ev;

	ca->acc = 0;
	ca->ack_count = 0;
	ca->last_rtt_us = 0;
	ca->best_rtt_us = 0;
	ca->loss_cwnd = 0;
	ca->prior_ack_count = 0;
	ca->id = __sync_fetch_and_add(&mlab_sockets, 1) + 1;
	ev = ev_begin(sk, EV_INIT);
	if (ev) {
		ev->saddr = sk->__sk_common.skc_rcv_saddr;
		ev_end(ev, ca);
	}
}

SEC("struct_ops")
void BPF_PROG(mlab_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct mlab_ca *ca = ca_of(sk);
	__s32 rtt = sample->rtt_us;
	struct mlab_event *ev;

	if (rtt <= 0)
		return;
	ev = ev_begin(sk, EV_RTT);
	ca->last_rtt_us = rtt;
	if (!ca->best_rtt_us || (__u32)rtt < ca->best_rtt_us)
		ca->best_rtt_us = rtt;
	if (ev) {
		ev->acked = rtt;
		ev_end(ev, ca);
	}
}

static __always_inline int cwnd_limited(struct tcp_sock *tp)
{
	if (tp->snd_cwnd < tp->snd_ssthresh) /* slow start: grow to twice what was in flight */
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return !!BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

SEC("struct_ops")
void BPF_PROG(mlab_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_of(sk);
	struct mlab_ca *ca = ca_of(sk);
	struct mlab_event *ev = ev_begin(sk, EV_ACK);
	__s64 inc;
	__u64 cwnd;

	if (ev)
		ev->acked = acked;
	if (!cwnd_limited(tp))
		goto out;
	if (ev)
		ev->limited = 1;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked); /* every algorithm keeps Reno's slow start */
		if (!acked)
			goto out;
	}
	__sync_fetch_and_add(&mlab_acks, 1);
	inc = increase(sk, ca, acked, ev);
	if (ev)
		ev->inc = inc;
	if (inc <= 0)
		goto out;
	ca->acc += (__u64)inc * acked;
	if (ca->acc >= (1ULL << FP)) {
		cwnd = (__u64)tp->snd_cwnd + (ca->acc >> FP);
		ca->acc &= (1ULL << FP) - 1;
		tp->snd_cwnd = cwnd < tp->snd_cwnd_clamp ? (__u32)cwnd : tp->snd_cwnd_clamp;
	}
out:
	if (ev) {
		ev->out = tp->snd_cwnd;
		ev_end(ev, ca);
	}
}

SEC("struct_ops")
__u32 BPF_PROG(mlab_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_of(sk);
	struct mlab_ca *ca = ca_of(sk);
	struct mlab_event *ev = ev_begin(sk, EV_LOSS);
	__u32 w[MAX_SUBFLOWS] = {}, rtt[MAX_SUBFLOWS] = {};
	__u64 total = 0;
	__u32 cwnd = tp->snd_cwnd, ret, no_rtt = 0;
	int n, i, self = 0;

	__sync_fetch_and_add(&mlab_losses, 1);
	ca->loss_cwnd = cwnd;
	ca->prior_ack_count = ca->ack_count;
	ca->ack_count = 0; /* CS218: a loss ends the run of consecutive ACKs */
	ca->acc = 0;
	if (MLAB_ALGO == ALGO_COUPLED) { /* w_r - w_total / 2 */
		n = subflows(sk, w, rtt, &self, &no_rtt);
		record_subflows(ev, n, self, no_rtt, w, rtt);
		for (i = 0; i < MAX_SUBFLOWS; i++) {
			if (i >= n)
				break;
			total += w[i];
		}
		total = (total + 1) / 2; /* rounded up, so the window is w_r - w_total/2 rounded down */
		ret = cwnd >= total + 2 ? cwnd - (__u32)total : 2;
	} else {
		ret = cwnd >> 1 > 2 ? cwnd >> 1 : 2; /* w_r / 2 */
	}
	if (ev) {
		ev->out = ret;
		ev_end(ev, ca);
	}
	return ret;
}

SEC("struct_ops")
__u32 BPF_PROG(mlab_undo_cwnd, struct sock *sk)
{
	struct mlab_ca *ca = ca_of(sk);
	struct mlab_event *ev = ev_begin(sk, EV_UNDO);
	__u32 ret;

	/* The loss was spurious: the run of ACKs it ended goes on. */
	ca->ack_count += ca->prior_ack_count;
	ca->prior_ack_count = 0;
	ret = tcp_reno_undo_cwnd(sk); /* max(cwnd, the cwnd before the loss) */
	if (ev) {
		ev->acked = tcp_of(sk)->prior_cwnd;
		ev->out = ret;
		ev_end(ev, ca);
	}
	return ret;
}

SEC(".struct_ops")
struct tcp_congestion_ops MLAB_NAME = {
	.init = (void *)mlab_init,
	.pkts_acked = (void *)mlab_pkts_acked,
	.cong_avoid = (void *)mlab_cong_avoid,
	.ssthresh = (void *)mlab_ssthresh,
	.undo_cwnd = (void *)mlab_undo_cwnd,
#define STR2(x) #x
#define STR(x) STR2(x)
	.name = STR(MLAB_NAME),
};
