/*
 * jccl's Open MPI side of `jccl bench --compare mpi`: the same sizes and method as jccl's benchmark.
 *
 *   mpicc -O2 -o mpi_bench mpi_bench.c && mpirun -np N ./mpi_bench OUT.json OP SCALE BYTES...
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
    FILE *f = rank == 0 ? fopen(out, "w") : NULL;
    if (f) fprintf(f, "[");
    for (int s = 4; s < argc; s++) {
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
        if (f) fprintf(f, "%s{\"op\":\"%s\",\"bytes\":%ld,\"medianUs\":%.3f}", s > 4 ? "," : "", op, 4 * count, med);
        free(a); free(b); free(t);
    }
    if (f) { fprintf(f, "]\n"); fclose(f); }
    MPI_Finalize();
    return 0;
}
