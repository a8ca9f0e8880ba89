package com.example.consumer;

import io.jccl.Jccl;
import io.jccl.ReduceOp;

import java.util.Arrays;
import java.util.List;

/**
 * Four ranks as threads of this JVM: rank r contributes r + 1 in every element, so an allreduce SUM must give
 * 1 + 2 + 3 + 4 = 10 everywhere on every rank. Exits 1 when it does not. Says where jccl was loaded from, so that
 * run.sh can check that the module path run really used the module io.jccl.core.
 */
public final class AllReduceSum {
    private AllReduceSum() {
    }

    /**
     * Runs the allreduce and checks the sum.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        int world = 4;
        int count = 1024;
        List<float[]> results = Jccl.runThreads(world, comm -> {
            float[] data = new float[count];
            Arrays.fill(data, comm.rank() + 1);
            comm.allReduce(data, ReduceOp.SUM);
            return data;
        });
        float expected = world * (world + 1) / 2f;
        for (int r = 0; r < world; r++) {
            float[] got = results.get(r);
            for (int i = 0; i < count; i++) {
                if (got[i] != expected) {
                    System.out.println("AllReduceSum: FAIL: rank " + r + " element " + i + " = " + got[i]
                            + ", expected " + expected);
                    System.exit(1);
                }
            }
        }
        System.out.println("AllReduceSum: " + world + " ranks, allReduce SUM of " + count + " floats = " + expected
                + " on every rank; " + Where.jccl() + ", " + Where.of(AllReduceSum.class));
    }
}
