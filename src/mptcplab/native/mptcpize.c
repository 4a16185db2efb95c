/* LD_PRELOAD shim: make a TCP program open MPTCP sockets, as mptcpd's `mptcpize run` does.
 * Used only where neither iperf3 --mptcp (>= 3.19) nor mptcpize exists (Debian 12 has neither).
 * socket(AF_INET/AF_INET6, SOCK_STREAM, 0 or IPPROTO_TCP) becomes socket(..., IPPROTO_MPTCP). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

int socket(int family, int type, int protocol)
{
	static int (*real_socket)(int, int, int);

	if (!real_socket)
		real_socket = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if ((family == AF_INET || family == AF_INET6) && (type & 0xff) == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP))
		protocol = IPPROTO_MPTCP;
	return real_socket(family, type, protocol);
}
