#!/usr/bin/python3
"""jccl's gloo reference: runs a batch of collective cases on torch.distributed's gloo backend.

Usage: gloo_reference.py WORKDIR

WORKDIR/cases.json   {"world": N, "cases": [{"id", "primitive", "dtype", "op", "count", "root"}, ...]}
WORKDIR/in_ID_R.bin  rank R's input for case ID, raw native-endian elements (scatter: the root's only)
Writes WORKDIR/out_ID_R.bin for every rank and case it ran, and WORKDIR/results.json (rank 0):
  {"torch": version, "cases": {ID: {"status": "ok"|"rejected", "reference": what was compared, "message": ...}}}

Where torch 1.13's gloo lacks something the comparison is made with the nearest real thing:
  reduce_scatter -> the rank's block of gloo's all_reduce of the full input
  AVG            -> gloo's SUM, then divided by the world size in the dtype (torch: x / n; integers truncate)
  bfloat16       -> data movement runs on gloo with the bits viewed as float16; reductions use an exact model of
                    gloo's ring order in bfloat16 (each partial sum rounded), as newer gloo computes it.
"""
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32, "int64": torch.int64,
}
OPS = {
    "SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN, "MAX": dist.ReduceOp.MAX,
    "BAND": dist.ReduceOp.BAND, "BOR": dist.ReduceOp.BOR, "BXOR": dist.ReduceOp.BXOR,
}
MAX_SEGMENT_BYTES = 1 << 20
GLOO_EMPTY_ALLGATHER = "not run: gloo crashes (SIGFPE) on an empty all_gather"


def load(workdir, cid, rank, dtype, count):
    path = os.path.join(workdir, "in_%d_%d.bin" % (cid, rank))
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if count == 0:
        return torch.empty(0, dtype=dtype)
    t = torch.frombuffer(data, dtype=dtype)
    assert t.numel() == count, (path, t.numel(), count)
    return t.clone()


def save(workdir, cid, rank, t):
    with open(os.path.join(workdir, "out_%d_%d.bin" % (cid, rank)), "wb") as f:
        f.write(t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def divide(t, n):
    if t.is_floating_point():
        return t / n
    return torch.div(t, n, rounding_mode="trunc")


def ring_model(xs, op, n):
    """gloo's ring allreduce order: chunk c = (((x[c-1] op x[c-2]) op ...) op x[c]), in the dtype."""
    count = xs[0].numel()
    elem = xs[0].element_size()
    total = count * elem
    maxseg = elem * max(1, MAX_SEGMENT_BYTES // elem)
    nseg = max(-(-total // maxseg), 2 * n)
    nseg = -(-nseg // n) * n
    seg = -(-(-(-total // nseg)) // elem) * elem
    chunk = (nseg // n) * seg // elem
    y = torch.empty_like(xs[0])
    for c in range(n):
        lo, hi = min(count, c * chunk), min(count, (c + 1) * chunk)
        if lo >= hi:
            continue
        acc = xs[(c - 1) % n][lo:hi].clone()
        for k in range(2, n + 1):
            own = xs[(c - k) % n][lo:hi]
            if op == "SUM" or op == "AVG":
                acc = own + acc
            elif op == "PRODUCT":
                acc = own * acc
            elif op == "MIN":
                acc = torch.minimum(own, acc)
            elif op == "MAX":
                acc = torch.maximum(own, acc)
            else:
                raise RuntimeError("op %s is not defined for %s" % (op, xs[0].dtype))
        y[lo:hi] = acc
    return y


def all_reduce(x, op, n):
    """Returns (result, reference description)."""
    if op == "AVG":
        dist.all_reduce(x, op=dist.ReduceOp.SUM)
        return divide(x, n), "gloo SUM / N"
    dist.all_reduce(x, op=OPS[op])
    return x, "gloo"


def run_case(workdir, case, rank, n):
    cid, prim, op, count, root = case["id"], case["primitive"], case.get("op"), case["count"], case["root"]
    dtype = DTYPES[case["dtype"]]
    bf16 = dtype == torch.bfloat16
    move = torch.float16 if bf16 else dtype  # dtype that carries the bits through gloo for data movement

    def inp(r, c):
        return load(workdir, cid, r, dtype, c)

    if op in ("BAND", "BOR", "BXOR") and dtype.is_floating_point:
        # torch 1.13 raises this from gloo's worker thread, and the error then also fails the next collective;
        # raise torch's own message here instead of running the call.
        raise RuntimeError("Cannot use ReduceOp.%s with non-integral dtype" % op)

    if prim in ("all_reduce", "reduce_scatter", "reduce") and bf16:
        xs = [inp(r, count) for r in range(n)]
        y = ring_model(xs, op, n)
        if op == "AVG":
            y = divide(y, n)
        if prim == "reduce_scatter":
            b = count // n
            y = y[rank * b:(rank + 1) * b]
        if prim == "reduce" and rank != root:
            return None, "model of gloo ring (bfloat16)"
        return y, "model of gloo ring (bfloat16)"

    if prim == "all_reduce":
        return all_reduce(inp(rank, count), op, n)
    if prim == "reduce_scatter":
        y, ref = all_reduce(inp(rank, count), op, n)
        b = count // n
        return y[rank * b:(rank + 1) * b].clone(), ref + ", block of all_reduce"
    if prim == "reduce":
        x = inp(rank, count)
        if op == "AVG":
            dist.reduce(x, root, op=dist.ReduceOp.SUM)
            return (divide(x, n) if rank == root else None), "gloo reduce SUM / N"
        dist.reduce(x, root, op=OPS[op])
        return (x if rank == root else None), "gloo reduce"
    if prim == "broadcast":
        x = inp(rank, count).view(move)
        dist.broadcast(x, root)
        return x.view(dtype), "gloo" + (" (bits as float16)" if bf16 else "")
    if prim == "all_gather":
        b = count // n
        if b == 0:
            # gloo 5b14351 (Debian's torch 1.13) divides by zero on an empty all_gather and the rank dies (SIGFPE)
            raise RuntimeError(GLOO_EMPTY_ALLGATHER)
        x = inp(rank, b).view(move)
        out = torch.empty(count, dtype=move)
        dist.all_gather(list(out.split(b)) if b else [torch.empty(0, dtype=move) for _ in range(n)], x)
        return out.view(dtype), "gloo" + (" (bits as float16)" if bf16 else "")
    if prim == "gather":
        b = count // n
        x = inp(rank, b).view(move)
        out = torch.empty(count, dtype=move)
        lst = (list(out.split(b)) if b else [torch.empty(0, dtype=move) for _ in range(n)]) if rank == root else None
        dist.gather(x, lst, root)
        return (out.view(dtype) if rank == root else None), "gloo" + (" (bits as float16)" if bf16 else "")
    if prim == "scatter":
        b = count // n
        out = torch.empty(b, dtype=move)
        lst = None
        if rank == root:
            full = inp(rank, count).view(move)
            lst = list(full.split(b)) if b else [torch.empty(0, dtype=move) for _ in range(n)]
        dist.scatter(out, lst, root)
        return out.view(dtype), "gloo" + (" (bits as float16)" if bf16 else "")
    if prim == "all_to_all":
        x = inp(rank, count).view(move)
        out = torch.empty(count, dtype=move)
        dist.all_to_all_single(out, x)
        return out.view(dtype), "gloo all_to_all_single" + (" (bits as float16)" if bf16 else "")
    raise RuntimeError("unknown primitive " + prim)


def worker(rank, n, port, workdir, cases):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    results = {}
    for case in cases:
        try:
            y, ref = run_case(workdir, case, rank, n)
            if y is not None:
                save(workdir, case["id"], rank, y)
            results[case["id"]] = {"status": "ok", "reference": ref}
        except RuntimeError as e:
            results[case["id"]] = {"status": "rejected", "reference": "gloo",
                                   "message": str(e).split("\n")[0]}
        dist.barrier()
    if rank == 0:
        with open(os.path.join(workdir, "results.json"), "w") as f:
            json.dump({"torch": torch.__version__, "cases": results}, f)
    dist.destroy_process_group()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    workdir = sys.argv[1]
    with open(os.path.join(workdir, "cases.json")) as f:
        spec = json.load(f)
    mp.spawn(worker, args=(spec["world"], free_port(), workdir, spec["cases"]), nprocs=spec["world"], join=True)


if __name__ == "__main__":
    main()
