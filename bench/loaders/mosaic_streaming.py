"""Peer: MosaicML Streaming. Shards written by its MDSWriter (raw bytes column,
no compression) and uploaded; StreamingDataset downloads them from S3 into its
local cache (cache_limit: evicts the least recently used shards when full) and a
DataLoader batches them."""
import os
import shutil
import tempfile

import numpy as np
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

        def collate(samples):  # decoded in the worker, as a subclass's __getitem__ would
            out = [decode(s["x"], n) for s in samples]
            return torch.from_numpy(np.stack([o[0] for o in out])), torch.tensor([o[1] for o in out])

        self.ds = StreamingDataset(remote=ctx.url(), local=ctx.cache_dir, batch_size=ctx.batch, shuffle=True,
                                   shuffle_seed=ctx.seed, cache_limit=ctx.cache_bytes or None)
        self.loader = torch.utils.data.DataLoader(self.ds, batch_size=ctx.batch, num_workers=ctx.workers,
                                                  drop_last=True, collate_fn=collate,
                                                  persistent_workers=ctx.workers > 0)

    def epoch(self, e):
        return self.loader  # each pass over the loader is Streaming's next epoch


def batches(ctx):
    return Batches(ctx)
