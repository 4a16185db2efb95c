/* Guest-side stress for UML's basic time-travel: several processes each read the clock a few
 * times (each read moves the guest clock 256 ns inside an irq-off section) and sleep a few tens of
 * microseconds (no timer slack), for S seconds of guest time. The guest is mostly idle, so its clock jumps from
 * timer to timer faster than the host's alarms for those timers arrive: a stale alarm handled as
 * a clock read re-enables interrupts panics an unpatched kernel ("time goes backwards").
 * Usage: uml-clock-stress [S=5] [PROCS=4] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    int secs = argc > 1 ? atoi(argv[1]) : 5, procs = argc > 2 ? atoi(argv[2]) : 4;
    /* No timer slack (50 us by default): each sleep is a timer event a few clock reads away. */
    prctl(PR_SET_TIMERSLACK, 1UL);
    for (int p = 0; p < procs; p++) if (fork() == 0) {
        struct timespec t0, t, nap = {0, 1000 + 3000 * p};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        unsigned long reads = 0;
        long shown = 0;
        do {
            for (int i = 0; i < 4 + 3 * p; i++, reads++) clock_gettime(CLOCK_MONOTONIC, &t);
            nanosleep(&nap, NULL);
            if (p == 0 && t.tv_sec - t0.tv_sec > shown) {  /* progress: a slow boot is not a hung one */
                shown = t.tv_sec - t0.tv_sec;
                printf("guest second %ld\n", shown); fflush(stdout);
            }
        } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < secs * 1000000000L);
        printf("proc %d: %lu clock reads\n", p, reads); fflush(stdout);
        _exit(0);
    }
    while (wait(NULL) > 0) {}
    return 0;
}
