/*
 * jccl's Open MPI side of `jccl bench --compare mpi`: the same sizes and method as jccl's benchmark.
 *
 *   mpicc -O2 -o mpi_bench mpi_bench.c && mpirun -np N ./mpi_bench OUT.json OP SCALE [rtt] BYTES...
 *
 * With "rtt", before each size ranks 0 and 1 also measure the round trip of a cache line between their cores, as
 * jccl's bench does (io.jccl.bench.CoreRoundTrip): a counter passed through two lines 256 bytes apart of a window
 * of shared memory (MPI_Win_allocate_shared), release stores and acquire loads, a warm-up window and eleven timed
 * windows of 5,000 round trips, the median window's ns per round trip ("coreRoundTripNs"; -1 where not measured; a
 * window over 0.2 s, ranks sharing a core, or a partner silent for 2 s turns it off).
 *
 * Per timed iteration: MPI_Barrier, clock, one op, clock; per-iteration time = max over ranks (one
 * MPI_Allreduce MAX at the end), size time = median over iterations. float32, SUM. OP: all_reduce (in place),
 * broadcast (root 0), all_gather, reduce_scatter (MPI_Reduce_scatter_block), all_to_all, reduce (root 0).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

#include <time.h>

#define RTT_WINDOW 5000

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* A spinning thread's hint to the core, where the compiler has one. */
static inline void spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins until *at holds v; 0 if it holds -1 (rank 0 stopped the measurement) or after 2 s without v. */
static int await_value(volatile long *at, long v) {
    double since = 0;
    for (long spin = 1;; spin++) {
        long seen = __atomic_load_n(at, __ATOMIC_ACQUIRE);
        if (seen == v) break;
        if (seen == -1) return 0;
        if ((spin & 4095) == 0) {
            double t = now_ns();
            if (since == 0) since = t;
            else if (t - since > 2e9) return 0;
        }
        spin_pause();
    }
    return 1;
}

/* Collective: ns per round trip between rank 0's and rank 1's cores (rank 0), -1 elsewhere or when off. */
static double core_rtt(long *lines, int rank, long *sent, int *on) {
    if (!*on) return -1;
    MPI_Barrier(MPI_COMM_WORLD);
    double w[11];
    int answered = 1;
    for (int k = -1; k < 11 && answered && rank <= 1; k++) {
        double t0 = now_ns();
        for (int i = 0; i < RTT_WINDOW && answered; i++) {
            long v = ++*sent;
            if (rank == 0) {
                __atomic_store_n(&lines[0], v, __ATOMIC_RELEASE);
                answered = await_value(&lines[32], v);
            } else {
                answered = await_value(&lines[0], v);
                __atomic_store_n(&lines[32], v, __ATOMIC_RELEASE);
            }
        }
        double took = now_ns() - t0;
        if (answered && rank == 0 && took > 2e8) { /* over the window's budget (a shared core): stop rank 1 too */
            __atomic_store_n(&lines[0], -1L, __ATOMIC_RELEASE);
            answered = 0;
        }
        if (k >= 0) w[k] = took / RTT_WINDOW;
    }
    MPI_Allreduce(MPI_IN_PLACE, &answered, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    *on = answered;
    if (!answered || rank != 0) return -1;
    qsort(w, 11, sizeof(double), cmp);
    return w[5];
}

static void iterations(long bytes, double scale, int *warm, int *iters) {
    int w, i;
    if (bytes <= 64L << 10) { w = 50; i = 300; }
    else if (bytes <= 1L << 20) { w = 10; i = 100; }
    else if (bytes <= 16L << 20) { w = 3; i = 20; }
    else { w = 2; i = 10; }
    *warm = (int) (w * scale) < 1 ? 1 : (int) (w * scale);
    *iters = (int) (i * scale) < 3 ? 3 : (int) (i * scale);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *out = argv[1];
    const char *op = argv[2];
    double scale = atof(argv[3]);
    int first = 4, rtt_on = 0;
    long *lines = NULL, sent = 0;
    MPI_Win win = MPI_WIN_NULL;
    if (argc > 4 && !strcmp(argv[4], "rtt")) {
        first = 5;
        MPI_Comm node;
        int node_size;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &node_size);
        int together = node_size == n && n >= 2;
        MPI_Allreduce(MPI_IN_PLACE, &together, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (together) { /* every rank on this host: node's ranks are MPI_COMM_WORLD's, in its order */
            long *base;
            MPI_Win_allocate_shared(rank == 0 ? 4096 : 0, 1, MPI_INFO_NULL, node, &base, &win);
            MPI_Aint size;
            int unit;
            MPI_Win_shared_query(win, 0, &size, &unit, &lines);
            if (rank == 0) memset(lines, 0, 4096);
            MPI_Barrier(MPI_COMM_WORLD);
            rtt_on = 1;
        }
        MPI_Comm_free(&node); /* the window keeps what it needs */
    }
    FILE *f = rank == 0 ? fopen(out, "w") : NULL;
    if (f) fprintf(f, "[");
    for (int s = first; s < argc; s++) {
        long count = atol(argv[s]) / 4;
        if (count < 1) count = 1;
        int blocked = strcmp(op, "all_reduce") && strcmp(op, "broadcast") && strcmp(op, "reduce");
        if (blocked) count = ((count + n - 1) / n) * n;
        if (blocked && count < n) count = n;
        long block = count / n;
        float *a = malloc(sizeof(float) * count), *b = malloc(sizeof(float) * count);
        for (long i = 0; i < count; i++) a[i] = (float) (rank + 1);
        int warm, iters;
        iterations(4 * count, scale, &warm, &iters);
        double rtt = core_rtt(lines, rank, &sent, &rtt_on);
        double *t = calloc(iters, sizeof(double));
        for (int i = -warm; i < iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (!strcmp(op, "all_reduce")) MPI_Allreduce(MPI_IN_PLACE, a, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(op, "broadcast")) MPI_Bcast(a, (int) count, MPI_FLOAT, 0, MPI_COMM_WORLD);
            else if (!strcmp(op, "reduce")) MPI_Reduce(rank ? a : MPI_IN_PLACE, a, (int) count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            else if (!strcmp(op, "all_gather")) MPI_Allgather(a, (int) block, MPI_FLOAT, b, (int) block, MPI_FLOAT, MPI_COMM_WORLD);
            else if (!strcmp(op, "reduce_scatter")) MPI_Reduce_scatter_block(a, b, (int) block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else if (!strcmp(op, "all_to_all")) MPI_Alltoall(a, (int) block, MPI_FLOAT, b, (int) block, MPI_FLOAT, MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            if (i >= 0) t[i] = (t1 - t0) * 1e6;
        }
        MPI_Allreduce(MPI_IN_PLACE, t, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        qsort(t, iters, sizeof(double), cmp);
        double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
        if (f) fprintf(f, "%s{\"op\":\"%s\",\"bytes\":%ld,\"medianUs\":%.3f,\"coreRoundTripNs\":%.1f}",
                       s > first ? "," : "", op, 4 * count, med, rtt);
        free(a); free(b); free(t);
    }
    if (f) { fprintf(f, "]\n"); fclose(f); }
    if (win != MPI_WIN_NULL) MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
