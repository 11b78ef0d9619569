"""Peer: WebDataset. Tar shards (members KEY.bin = the sample's bytes) made with
the standard tarfile module, uploaded public-read, and read over plain HTTP
(WebDataset's own http opener, a curl per shard) through strata-proxy. With a
cache it keeps downloaded shards in its cache_dir (cache_size bounds it)."""
import io
import os
import shutil
import tarfile
import tempfile

import torch

from harness import decode
from uploads import upload_dir


def write(ds, ctx):
    tmp = tempfile.mkdtemp(prefix="wds-")
    shard, size, tf = 0, 0, None
    for i in range(len(ds)):
        if tf is None or size >= ctx.shard_bytes:
            if tf:
                tf.close()
            tf = tarfile.open(os.path.join(tmp, f"shard-{shard:06d}.tar"), "w")
            shard, size = shard + 1, 0
        b = ds.sample_bytes(i)
        info = tarfile.TarInfo(f"{i:08d}.bin")
        info.size = len(b)
        tf.addfile(info, io.BytesIO(b))
        size += len(b) + 1024  # header + padding, about
    tf.close()
    upload_dir(ctx, tmp, acl="public-read")
    shutil.rmtree(tmp)


def shard_urls(ctx):
    s3 = ctx.s3()
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=ctx.bucket, Prefix=ctx.prefix + "/"):
        keys += [o["Key"] for o in page.get("Contents", []) if o["Key"].endswith(".tar")]
    return [f"{ctx.endpoint}/{ctx.bucket}/{k}" for k in sorted(keys)]


class Batches:
    def __init__(self, ctx):
        import webdataset as wds
        shutil.rmtree(ctx.cache_dir, ignore_errors=True)
        os.makedirs(ctx.cache_dir)
        n = ctx.meta["sample_len"]
        urls = shard_urls(ctx)  # listed before the timed epochs

        def to_sample(s):
            img, label = decode(s["bin"], n)
            return torch.from_numpy(img.copy()), label

        kw = {}
        if ctx.cache_bytes:
            kw = {"cache_dir": ctx.cache_dir, "cache_size": ctx.cache_bytes}
        ds = (wds.WebDataset(urls, shardshuffle=len(urls), nodesplitter=wds.split_by_node,
                             workersplitter=wds.split_by_worker, seed=ctx.seed, **kw)
              .shuffle(1000).map(to_sample).batched(ctx.batch, partial=False))
        self.loader = wds.WebLoader(ds, batch_size=None, num_workers=ctx.workers,
                                    persistent_workers=ctx.workers > 0)

    def epoch(self, e):
        return self.loader


def batches(ctx):
    return Batches(ctx)
