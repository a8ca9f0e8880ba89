#!/usr/bin/python3
"""jccl's gloo side of `jccl bench --compare gloo`: the same sizes and the same method as jccl's benchmark.

Usage: gloo_bench.py OUT.json WORLD OP SCALE BYTES...
On the multi-host test bed the script runs once per host: GLOO_BENCH_NODE (this host's index),
GLOO_BENCH_PER_NODE (its ranks, consecutive) and GLOO_BENCH_MASTER (host:port of rank 0's store) say which ranks
are its own; GLOO_SOCKET_IFNAME names the bed's interface.
Method: warm-up, then per timed iteration: barrier, clock, one op, clock; per-iteration time = max over ranks
(an all_reduce MAX of every iteration's time at the end), size time = median over iterations. float32, SUM.
torch 1.13's gloo has no reduce_scatter: it is measured as all_to_all_single plus a local sum of the N received
blocks (the same bytes on the wire), and labelled so.
"""
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def iterations(nbytes, scale):
    if nbytes <= 64 << 10:
        w, i = 50, 300
    elif nbytes <= 1 << 20:
        w, i = 10, 100
    elif nbytes <= 16 << 20:
        w, i = 3, 20
    else:
        w, i = 2, 10
    return max(1, int(w * scale)), max(3, int(i * scale))


def worker(local, n, master, op, scale, sizes, out, first):
    rank = first + local
    host, port = master
    os.environ["MASTER_ADDR"] = host
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    rows = []
    for nbytes in sizes:
        count = max(1, nbytes // 4)
        if op not in ("all_reduce", "broadcast", "reduce"):
            count = max(n, -(-count // n) * n)
        block = count // n
        a = torch.full((count,), float(rank + 1))
        b = torch.empty(count)
        warm, iters = iterations(4 * count, scale)
        times = torch.zeros(iters, dtype=torch.float64)
        # all_gather's output list, made once: not timed (block is 0 for the ops that take whole buffers)
        outs = list(b.split(block)) if op == "all_gather" else None
        for i in range(-warm, iters):
            dist.barrier()
            t0 = time.perf_counter()
            if op == "all_reduce":
                dist.all_reduce(a)
            elif op == "broadcast":
                dist.broadcast(a, 0)
            elif op == "reduce":
                dist.reduce(a, 0)
            elif op == "all_gather":
                dist.all_gather(outs, a[:block])
            elif op == "all_to_all":
                dist.all_to_all_single(b, a)
            elif op == "reduce_scatter":
                dist.all_to_all_single(b, a)
                b.view(n, block).sum(0)
            t1 = time.perf_counter()
            if i >= 0:
                times[i] = (t1 - t0) * 1e6
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        s = sorted(times.tolist())
        med = s[iters // 2] if iters % 2 == 1 else (s[iters // 2 - 1] + s[iters // 2]) / 2
        rows.append({"op": op, "bytes": 4 * count, "medianUs": med,
                     "method": "all_to_all_single + local sum" if op == "reduce_scatter" else "native"})
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    out, world, op, scale = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    sizes = [int(x) for x in sys.argv[5:]]
    if "GLOO_BENCH_NODE" in os.environ:
        per = int(os.environ["GLOO_BENCH_PER_NODE"])
        first = int(os.environ["GLOO_BENCH_NODE"]) * per
        host, port = os.environ["GLOO_BENCH_MASTER"].rsplit(":", 1)
        mp.spawn(worker, args=(world, (host, int(port)), op, scale, sizes, out, first), nprocs=per, join=True)
    else:
        mp.spawn(worker, args=(world, ("127.0.0.1", free_port()), op, scale, sizes, out, 0), nprocs=world, join=True)


if __name__ == "__main__":
    main()
