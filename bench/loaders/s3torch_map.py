"""Peer: Amazon's s3torchconnector, its map-style S3MapDataset over the
one-object-per-sample copy (written by boto3_objects; its docs list objects
under a prefix), in a PyTorch DataLoader. It has no cache. --max-samples reads a
random subset per epoch, as for boto3_objects."""
import torch

from harness import decode, per_sample_epoch


def write(ds, ctx):  # reads the per-sample objects boto3_objects wrote
    raise SystemExit("s3torch_map reads boto3_objects' copy; write that one")


class Batches:
    def __init__(self, ctx):
        from s3torchconnector import S3MapDataset, S3ClientConfig
        n = ctx.meta["sample_len"]

        def transform(obj):
            img, label = decode(obj.read(), n)
            return torch.from_numpy(img.copy()), label

        # Keys in sample order (zero-padded), so index i is sample i. Listed before the timed epochs.
        self.ds = S3MapDataset.from_prefix(ctx.url() + "/", region="us-east-1", endpoint=ctx.endpoint,
                                           transform=transform,
                                           s3client_config=S3ClientConfig(force_path_style=True))
        self.n = len(self.ds)
        self.ctx = ctx

    def epoch(self, e):
        return per_sample_epoch(self.ctx, self.ds, self.n, e)

def batches(ctx):
    return Batches(ctx)
