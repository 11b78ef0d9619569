"""Common harness of the object-store loading comparison (bench/loaders_vs_peers.sh).

One process = one reader and one step of the benchmark:
  harness.py write --reader NAME ...   put the dataset into the store in NAME's format
  harness.py read  --reader NAME ...   run NAME for --epochs epochs, one JSON line per epoch
  harness.py du    --reader - ...      bytes and objects stored under --prefix (sizes the caches)

Every reader gets the same consumer: batches of --batch samples, a sleep of
--step-ms per batch (the simulated training step), the time spent waiting in
next() counted as data-wait. GETs and bytes come from strata-proxy's counters
(GET /.strata-proxy/stats) read before and after each epoch, so no reader reports
its own traffic. The readers live beside this file, one module each; each has
write(ds, ctx) and batches(ctx) -> an object with epoch(e) yielding batches.
"""
import argparse
import gzip
import importlib
import json
import os
import signal
import sys
import time
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class Dataset:
    """Samples as fixed-size u8 images plus a u8 label, all in memory (the writer's input)."""

    def __init__(self, images, labels, shape):
        self.images, self.labels, self.shape = images, labels, shape

    def __len__(self):
        return len(self.labels)

    def sample_bytes(self, i):  # the object of sample i: image bytes then the label byte
        return self.images[i].tobytes() + bytes([int(self.labels[i])])


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def load_dataset(images, labels):
    x, y = read_idx(images), read_idx(labels)
    ds = Dataset(x.reshape(len(x), -1), y, x.shape[1:])
    ds.paths = (images, labels)  # for writers whose workers load it again (litdata spawns them)
    return ds


def decode(obj, sample_len):
    """One stored sample (image bytes + label byte) -> (u8 image, label): what every reader does."""
    a = np.frombuffer(obj, dtype=np.uint8, count=sample_len)
    return a[:-1], int(a[-1])


def collate(samples):
    return np.stack([s[0] for s in samples]), np.array([s[1] for s in samples], dtype=np.int64)


class Context:
    """What a reader needs: where the store is, its part of it, the run's knobs."""

    def __init__(self, a):
        self.a = a
        self.endpoint = a.endpoint  # strata-proxy (reads) or RGW (writes)
        self.bucket, self.prefix = a.bucket, a.prefix.strip("/")
        self.batch, self.workers, self.epochs = a.batch, a.workers, a.epochs
        self.cache_dir, self.cache_bytes = a.cache_dir, a.cache_bytes
        self.shard_bytes, self.seed, self.max_samples = a.shard_bytes, 1, a.max_samples
        self.write_samples = a.write_samples
        self.meta = json.loads(a.meta) if a.meta else {}

    def s3(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 5},
                                          max_pool_connections=64))

    def url(self, key=""):  # s3://bucket/prefix/key
        return f"s3://{self.bucket}/{self.prefix}/{key}".rstrip("/") if key else f"s3://{self.bucket}/{self.prefix}"



def per_sample_epoch(ctx, ds, n, e):
    """The per-object readers' epoch: a seeded permutation of the n samples (cut
    to ctx.max_samples), batched by a DataLoader with the harness's workers."""
    import torch  # the harness itself runs without torch for the non-torch readers
    order = np.random.default_rng(ctx.seed * 1000 + e).permutation(n)
    if ctx.max_samples:
        order = order[: ctx.max_samples]
    return torch.utils.data.DataLoader(ds, batch_size=ctx.batch, sampler=order.tolist(),
                                       num_workers=ctx.workers, drop_last=True)

def proxy_counts(stats_url):
    with urllib.request.urlopen(stats_url + "/.strata-proxy/stats", timeout=30) as r:
        return json.loads(r.read())["methods"]


def diff(after, before):
    out = {}
    for m, c in after.items():
        b = before.get(m, {})
        d = {k: v - b.get(k, 0) for k, v in c.items()}
        if d["requests"]:
            out[m] = d
    return out


class Stopped(Exception):
    pass


def on_term(*_):  # the script's timeout: report the unfinished epoch, then stop
    raise Stopped()


def disk_bytes(root):  # what the reader's cache holds on disk now
    total = 0
    for d, _, fs in os.walk(root):
        for f in fs:
            try:
                total += os.path.getsize(os.path.join(d, f))
            except OSError:
                pass  # evicted meanwhile
    return total


def run_read(mod, ctx, a):
    signal.signal(signal.SIGTERM, on_term)
    src = mod.batches(ctx)
    for e in range(a.epochs):
        time.sleep(0.3)  # let the previous epoch's last responses be counted
        p0 = proxy_counts(a.proxy_stats)
        t0 = time.perf_counter()
        wait = samples = 0.0
        partial, w0 = False, time.perf_counter()
        try:
            it = iter(src.epoch(e))
            for _ in range(10**9):  # bounded: an epoch ends when the reader's iterator does
                w0 = time.perf_counter()
                try:
                    b = next(it)
                except StopIteration:
                    break
                wait += time.perf_counter() - w0
                samples += len(b[1])
                time.sleep(a.step_ms / 1000.0)
        except Stopped:
            partial = True
            wait += time.perf_counter() - w0
        seconds = time.perf_counter() - t0
        p1 = proxy_counts(a.proxy_stats)
        d = diff(p1, p0)
        row = {"reader": a.reader, "epoch": e + 1, "samples": int(samples), "seconds": seconds,
               "wait": wait, "proxy_gets": d.get("GET", {}).get("requests", 0),
               "proxy_bytes": d.get("GET", {}).get("body_bytes", 0), "methods": d,
               "cache_bytes": ctx.cache_bytes, "workers": ctx.workers, "partial": partial,
               "cache_disk_bytes": disk_bytes(ctx.cache_dir)}
        print("json " + json.dumps(row), flush=True)
        if partial:
            os._exit(124)  # the workers are not waited for
    close = getattr(src, "close", None)
    if close:
        close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["write", "read", "du"])
    p.add_argument("--reader", required=True, help="module beside this file (boto3_objects, ...)")
    p.add_argument("--endpoint", required=True, help="S3 endpoint (RGW to write, strata-proxy to read)")
    p.add_argument("--proxy-stats", default="", help="strata-proxy's http://HOST:PORT (read)")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--images", help="IDX images (write)")
    p.add_argument("--labels", help="IDX labels (write)")
    p.add_argument("--shard-bytes", type=int, default=4 << 20)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--step-ms", type=float, default=5.0)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=4, help="DataLoader workers")
    p.add_argument("--cache-dir", default="/tmp/strata-peer-cache")
    p.add_argument("--cache-bytes", type=int, default=0, help="0: no limit")
    p.add_argument("--max-samples", type=int, default=0, help="read only this many samples per epoch (0: all)")
    p.add_argument("--write-samples", type=int, default=0,
                   help="per-object writers: put only the first N samples (0: all)")
    p.add_argument("--meta", default="", help="JSON the writer printed (sample count, shape)")
    a = p.parse_args()
    ctx = Context(a)
    if a.action == "du":
        total = count = 0
        for page in ctx.s3().get_paginator("list_objects_v2").paginate(Bucket=ctx.bucket, Prefix=ctx.prefix + "/"):
            for o in page.get("Contents", []):
                total, count = total + o["Size"], count + 1
        print(json.dumps({"bytes": total, "objects": count}))
        return
    mod = importlib.import_module(a.reader)
    if a.action == "write":
        ds = load_dataset(a.images, a.labels)
        t0 = time.perf_counter()
        written = mod.write(ds, ctx) or len(ds)
        meta = {"samples": len(ds), "written": written, "sample_len": int(ds.images.shape[1]) + 1, "shape": list(ds.shape),
                "write_seconds": time.perf_counter() - t0}
        print("meta " + json.dumps(meta), flush=True)
    else:
        run_read(mod, ctx, a)


if __name__ == "__main__":
    main()
