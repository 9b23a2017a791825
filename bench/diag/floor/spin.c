/* spin: keep one core busy for SECONDS, polling a private word as a waiting
 * rank does: "tight" (loads only) or "pause" (PAUSE in the loop). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static volatile unsigned long w;
int main(int argc, char **argv) {
    int pause = argc > 1 && !strcmp(argv[1], "pause");
    double secs = argc > 2 ? atof(argv[2]) : 1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        for (int i = 0; i < 100000; i++) {
            if (w == 42) return 1;
            if (pause) _mm_pause();
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 > secs) return 0;
    }
}
