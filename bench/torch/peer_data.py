"""In-memory training data for the PyTorch peer (its best case: no loader).
Fashion-MNIST from the idx files strata-pack reads, scaled to [0, 1] and
normalised with the config's mean/std once; byte tokens of the corpus text
scripts/corpus.sh writes, split as strata-pack tokens splits it (the last
val_fraction held out)."""
import gzip

import numpy as np
import torch

FASHION = "/usr/share/datasets/fashion-mnist"


def _idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist(cfg, split):
    prefix = "train" if split == "train" else "t10k"
    x = torch.from_numpy(_idx(f"{FASHION}/{prefix}-images-idx3-ubyte.gz").copy()).float().div_(255.0)
    y = torch.from_numpy(_idx(f"{FASHION}/{prefix}-labels-idx1-ubyte.gz").astype(np.int64))
    x = x.unsqueeze(1)  # (N, 1, 28, 28)
    d = cfg["data"]
    if d["normalize_mean"]:
        mean = torch.tensor(d["normalize_mean"]).view(1, -1, 1, 1)
        std = torch.tensor(d["normalize_std"]).view(1, -1, 1, 1)
        x = (x - mean) / std
    return x.contiguous(), y


def augment(cfg, x, g):
    """strata's data.augment_crop_padding and data.augment_hflip on a batch:
    zero-pad, crop back at a random offset per sample, mirror half the samples."""
    d = cfg["data"]
    pad, n, _, h, w = d["augment_crop_padding"], *x.shape
    if pad > 0:
        padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
        oy = torch.randint(0, 2 * pad + 1, (n,), generator=g)
        ox = torch.randint(0, 2 * pad + 1, (n,), generator=g)
        rows = (oy[:, None] + torch.arange(h))[:, :, None]  # (N, H, 1)
        cols = (ox[:, None] + torch.arange(w))[:, None, :]  # (N, 1, W)
        x = padded[torch.arange(n)[:, None, None], :, rows, cols].permute(0, 3, 1, 2).contiguous()
    if d["augment_hflip"]:
        flip = torch.rand(n, generator=g) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(3), x)
    return x


def corpus_windows(text_path, context, val_fraction=0.01):
    """(windows, context + 1) int64 token rows of the training split: window k
    reads tokens [kT, kT + T], as data/loader/token_windows.h."""
    raw = np.fromfile(text_path, dtype=np.uint8)
    train = raw[: len(raw) - int(len(raw) * val_fraction)]
    n = (len(train) - 1) // context
    idx = np.arange(n)[:, None] * context + np.arange(context + 1)[None, :]
    return torch.from_numpy(train[idx].astype(np.int64))
