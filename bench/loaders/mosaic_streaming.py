"""Peer: MosaicML Streaming. Shards written by its MDSWriter (raw bytes column,
no compression) and uploaded; StreamingDataset downloads them from S3 into its
local cache (cache_limit: evicts the least recently used shards when full) and a
DataLoader batches them."""
import os
import shutil
import tempfile

import torch

from harness import decode
from uploads import upload_dir


def write(ds, ctx):
    from streaming import MDSWriter
    tmp = tempfile.mkdtemp(prefix="mds-")
    with MDSWriter(out=tmp, columns={"x": "bytes"}, size_limit=ctx.shard_bytes, compression=None) as w:
        for i in range(len(ds)):
            w.write({"x": ds.sample_bytes(i)})
    upload_dir(ctx, tmp)
    shutil.rmtree(tmp)


class Batches:
    def __init__(self, ctx):
        from streaming import StreamingDataset
        from streaming.base.util import clean_stale_shared_memory
        os.environ["S3_ENDPOINT_URL"] = ctx.endpoint  # Streaming's boto3 client reads it
        clean_stale_shared_memory()
        shutil.rmtree(ctx.cache_dir, ignore_errors=True)
        n = ctx.meta["sample_len"]

        class Decoded(StreamingDataset):
            def __getitem__(self, i):
                img, label = decode(super().__getitem__(i)["x"], n)
                return torch.from_numpy(img.copy()), label

        self.ds = Decoded(remote=ctx.url(), local=ctx.cache_dir, batch_size=ctx.batch, shuffle=True,
                          shuffle_seed=ctx.seed, cache_limit=ctx.cache_bytes or None)
        self.loader = torch.utils.data.DataLoader(self.ds, batch_size=ctx.batch, num_workers=ctx.workers,
                                                  drop_last=True, persistent_workers=ctx.workers > 0)

    def epoch(self, e):
        return self.loader  # each pass over the loader is Streaming's next epoch


def batches(ctx):
    return Batches(ctx)
