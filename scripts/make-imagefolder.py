#!/usr/bin/env python3
"""Writes Fashion-MNIST as an ImageFolder of JPEG and PNG files: the test data set
of the image decoding path (strata-pack files, the loader's JPEG/PNG decoding).

  OUT/train/<class>/<index>.jpg|png   OUT/test/<class>/<index>.jpg|png

Each 28 x 28 greyscale image is upscaled (bilinear) to --size pixels and written
as RGB (--rgb: a tint drawn per image, so the channels differ but say
nothing of the class) or greyscale; every
--png-every-th file is a PNG, the rest JPEGs of --quality. --train/--test take
the first N images of each split (0: all). Classes are Fashion-MNIST's names.
Needs numpy and Pillow (Debian python3-numpy, python3-pil) and the data set
(Debian dataset-fashion-mnist, /usr/share/datasets/fashion-mnist).

usage: make-imagefolder.py OUT [--train N] [--test N] [--size S] [--rgb]
                           [--png-every K] [--quality Q] [--src DIR]
"""
import argparse
import gzip
import os
import sys

try:
    import numpy as np
    from PIL import Image
except ImportError as e:
    # Debian's python3-numpy and python3-pil belong to /usr/bin/python3: a pyenv
    # python first on the PATH has neither, so retry there (without the user's
    # site-packages) before giving up
    debian = "/usr/bin/python3"
    if os.environ.get("STRATA_IMAGEFOLDER_RETRY") is None and os.path.exists(debian):
        os.environ["STRATA_IMAGEFOLDER_RETRY"] = "1"
        os.execv(debian, [debian, "-s", os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit(f"make-imagefolder.py: needs numpy and Pillow ({e}); install them with\n"
             "  sudo apt-get install python3-numpy python3-pil")

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def write_split(out, images, labels, count, args):
    n = len(images) if count <= 0 else min(count, len(images))
    for c in CLASSES:
        os.makedirs(os.path.join(out, c), exist_ok=True)
    rng = np.random.default_rng(len(images))  # a fixed draw per split
    tints = rng.uniform(0.6, 1.0, size=(n, 3))
    for i in range(n):
        label = int(labels[i])
        img = Image.fromarray(images[i], "L").resize((args.size, args.size), Image.BILINEAR)
        if args.rgb:
            a = np.asarray(img, dtype=np.float64)[:, :, None] * tints[i][None, None, :]
            img = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")
        png = args.png_every > 0 and i % args.png_every == 0
        path = os.path.join(out, CLASSES[label], f"{i:05d}.{'png' if png else 'jpg'}")
        if png:
            img.save(path, "PNG")
        else:
            img.save(path, "JPEG", quality=args.quality)
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--train", type=int, default=0, help="first N training images (0: all 60000)")
    p.add_argument("--test", type=int, default=0, help="first N test images (0: all 10000)")
    p.add_argument("--size", type=int, default=40, help="side of the written images (default 40)")
    p.add_argument("--rgb", action="store_true", help="write RGB (a tint per class), not greyscale")
    p.add_argument("--png-every", type=int, default=3, help="every K-th file a PNG (0: none; default 3)")
    p.add_argument("--quality", type=int, default=90, help="JPEG quality (default 90)")
    p.add_argument("--src", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    splits = [("train", "train", args.train), ("test", "t10k", args.test)]
    for name, prefix, count in splits:
        images = read_idx(os.path.join(args.src, f"{prefix}-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(args.src, f"{prefix}-labels-idx1-ubyte.gz"))
        n = write_split(os.path.join(args.out, name), images, labels, count, args)
        print(f"{name}: {n} images in {os.path.join(args.out, name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
