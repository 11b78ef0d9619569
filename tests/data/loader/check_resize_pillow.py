#!/usr/bin/env python3
"""The loader's bilinear resampling and evaluation transform against Pillow.

Writes a test image (source.png, 70 x 50 RGB), Pillow's resampling of boxes of
it (Image.resize(size, BILINEAR, box=...): what torchvision's RandomResizedCrop
does to a PIL image) and of torchvision's evaluation transform, Resize(37) then
CenterCrop(32), as PIL computes it; then runs loader_image_decode_test's
PillowReference test on them, which allows a difference of 1 per pixel value.

usage: check_resize_pillow.py TEST_BINARY WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
from PIL import Image


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    h, w = 50, 70
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255 / (w - 1), yy * 255 / (h - 1), (xx + yy) * 2 % 256], axis=-1)
    noise = rng.integers(0, 60, size=(h, w, 3))  # edges too, not only a smooth ramp
    img = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")
    img.save(os.path.join(work, "source.png"))
    # name, box (x, y, width, height), output (width, height)
    cases = [
        ("down.raw", (0, 0, 70, 50), (24, 17)),  # downscale: antialiased
        ("crop_down.raw", (10, 5, 40, 30), (16, 16)),
        ("up.raw", (20, 10, 12, 9), (32, 32)),  # upscale: plain bilinear
        ("odd.raw", (3.5, 7.25, 50.5, 33.0), (21, 29)),  # fractional box (a DCT-scaled decode's)
        ("same.raw", (0, 0, 70, 50), (70, 50)),
    ]
    with open(os.path.join(work, "cases.txt"), "w") as f:
        for name, (x, y, bw, bh), (ow, oh) in cases:
            out = img.resize((ow, oh), Image.BILINEAR, box=(x, y, x + bw, y + bh))
            with open(os.path.join(work, name), "wb") as r:
                r.write(out.tobytes())
            f.write(f"{name} {x} {y} {bw} {bh} {ow} {oh}\n")
    # torchvision: Resize(round(32 / 0.875) = 37) on the shorter side, CenterCrop(32)
    size, short = 32, 37
    rw, rh = (int(short * w / h), short) if h <= w else (short, int(short * h / w))
    resized = img.resize((rw, rh), Image.BILINEAR)
    top, left = int(round((rh - size) / 2.0)), int(round((rw - size) / 2.0))
    crop = np.asarray(resized)[top:top + size, left:left + size, :]
    with open(os.path.join(work, "eval.raw"), "wb") as r:
        r.write(np.ascontiguousarray(crop.transpose(2, 0, 1)).tobytes())  # channels-first
    env = dict(os.environ, STRATA_PILLOW_DIR=work)
    return subprocess.call([binary, "--gtest_filter=PillowReference.*"], env=env)


if __name__ == "__main__":
    sys.exit(main())
