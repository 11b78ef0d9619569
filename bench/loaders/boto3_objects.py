"""Peer: one object per sample, read by a PyTorch DataLoader whose map-style
dataset GETs each sample through boto3 (what a per-file loader does on S3).
No cache: every epoch reads every sample again. With --max-samples it reads a
random subset per epoch (of the --write-samples objects written), as it is slow
at a 100 ms round trip."""
from concurrent.futures import ThreadPoolExecutor

import torch

from harness import decode, per_sample_epoch


def write(ds, ctx):
    s3 = ctx.s3()
    n = min(len(ds), ctx.write_samples or len(ds))  # the readers sample a random subset of these
    with ThreadPoolExecutor(32) as ex:
        list(ex.map(lambda i: s3.put_object(Bucket=ctx.bucket, Key=f"{ctx.prefix}/{i:08d}", Body=ds.sample_bytes(i)),
                    range(n)))
    return n


class PerObject(torch.utils.data.Dataset):
    def __init__(self, ctx):
        self.ctx, self.n, self.len = ctx, ctx.meta.get("written", ctx.meta["samples"]), ctx.meta["sample_len"]
        self.client = None  # made in each worker process, after the fork

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.client is None:
            self.client = self.ctx.s3()
        body = self.client.get_object(Bucket=self.ctx.bucket, Key=f"{self.ctx.prefix}/{i:08d}")["Body"].read()
        img, label = decode(body, self.len)
        return torch.from_numpy(img.copy()), label


class Batches:
    def __init__(self, ctx):
        self.ctx, self.ds = ctx, PerObject(ctx)

    def epoch(self, e):
        return per_sample_epoch(self.ctx, self.ds, self.ds.n, e)

def batches(ctx):
    return Batches(ctx)
