"""Peer: Lightning's LitData. Its chunk writer makes the chunks locally (one raw
bytes item per sample, chunk_bytes = the shard size), uploaded; its
StreamingDataset downloads chunks from S3 into cache_dir (max_cache_size bounds
it) and its StreamingDataLoader batches them."""
import os
import shutil
import tempfile

import torch

from harness import decode
from uploads import upload_dir


def write(ds, ctx):
    # litdata's BinaryWriter, the chunk writer litdata.optimize drives: optimize
    # itself ran at ~50 samples/s here (a spawned worker per call, per-item
    # bookkeeping), 20 minutes for Fashion-MNIST; the chunks and index.json are the same.
    from litdata.streaming.writer import BinaryWriter
    tmp = tempfile.mkdtemp(prefix="litdata-")
    w = BinaryWriter(tmp, chunk_bytes=ctx.shard_bytes)
    for i in range(len(ds)):
        w[i] = {"x": ds.sample_bytes(i)}
    w.done()
    w.merge()
    upload_dir(ctx, tmp)
    shutil.rmtree(tmp)


class Batches:
    def __init__(self, ctx):
        import litdata
        shutil.rmtree(ctx.cache_dir, ignore_errors=True)
        os.makedirs(ctx.cache_dir, exist_ok=True)
        os.environ["AWS_ENDPOINT_URL"] = ctx.endpoint  # its boto3 client reads it
        # Its chunk GETs go through obstore (Rust object_store), which refuses a
        # plain-http endpoint unless its client options allow it ("HTTP error:
        # builder error" otherwise); litdata exposes no setting, so its module's
        # options get allow_http (real S3 is https and needs none of this).
        from litdata.streaming import downloader
        downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True
        n = ctx.meta["sample_len"]

        class Decoded(litdata.StreamingDataset):
            def __getitem__(self, i):
                img, label = decode(super().__getitem__(i)["x"], n)
                return torch.from_numpy(img.copy()), label

        kw = {"max_cache_size": ctx.cache_bytes} if ctx.cache_bytes else {}
        self.ds = Decoded(ctx.url(), cache_dir=ctx.cache_dir, shuffle=True, seed=ctx.seed, drop_last=True,
                          storage_options={"endpoint_url": ctx.endpoint}, **kw)
        self.loader = litdata.StreamingDataLoader(self.ds, batch_size=ctx.batch, num_workers=ctx.workers,
                                                  drop_last=True, persistent_workers=ctx.workers > 0)

    def epoch(self, e):
        return self.loader


def batches(ctx):
    return Batches(ctx)
