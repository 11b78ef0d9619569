"""Writes N distinct ImageNet-sized JPEGs (500 x 375, or 375 x 500 for one in
five, quality 90, 4:2:0) in an ImageFolder layout, OUT/class-XX/img-NNNNN.jpg,
from the photographic samples scikit-image ships (Debian's python3-skimage:
astronaut, chelsea, coffee, hubble_deep_field, ihc, motorcycle_left/right,
retina, rocket). Each file is a random crop (a quarter to all of the photo's
area, aspect 4:3 jittered by +-15%) of one photo, resized with Pillow's bicubic
filter, mirrored half the time and its brightness scaled by 0.85-1.15, so no two
files are alike. Deterministic in --seed (the same Pillow gives the same bytes).

  /usr/bin/python3 -s bench/images/make_photo_jpegs.py --out DIR [--count 2000]
      [--classes 10] [--seed 1] [--quality 90]
"""
import argparse
import os
import random
import sys

from PIL import Image, ImageEnhance

SOURCES = ["astronaut.png", "chelsea.png", "coffee.png", "hubble_deep_field.jpg", "ihc.png",
           "motorcycle_left.png", "motorcycle_right.png", "retina.jpg", "rocket.jpg"]


def skimage_data_dir():
    for d in ("/usr/lib/python3/dist-packages/skimage/data",):
        if os.path.isdir(d):
            return d
    import skimage.data  # a pip-installed scikit-image
    return os.path.dirname(skimage.data.__file__)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quality", type=int, default=90)
    a = ap.parse_args()
    d = skimage_data_dir()
    photos = [Image.open(os.path.join(d, s)).convert("RGB") for s in SOURCES]
    rng = random.Random(a.seed)
    total = 0
    for i in range(a.count):
        src = photos[rng.randrange(len(photos))]
        W, H = src.size
        out_w, out_h = (500, 375) if rng.random() < 0.8 else (375, 500)
        aspect = out_w / out_h * rng.uniform(0.85, 1.15)
        area = W * H * rng.uniform(0.25, 1.0)
        w = min(W, max(16, round((area * aspect) ** 0.5)))
        h = min(H, max(16, round((area / aspect) ** 0.5)))
        x, y = rng.randint(0, W - w), rng.randint(0, H - h)
        im = src.resize((out_w, out_h), Image.BICUBIC, box=(x, y, x + w, y + h))
        if rng.random() < 0.5:
            im = im.transpose(Image.FLIP_LEFT_RIGHT)
        im = ImageEnhance.Brightness(im).enhance(rng.uniform(0.85, 1.15))
        cls = os.path.join(a.out, "class-%02d" % (i % a.classes))
        os.makedirs(cls, exist_ok=True)
        path = os.path.join(cls, "img-%05d.jpg" % i)
        im.save(path, "JPEG", quality=a.quality, subsampling="4:2:0")
        total += os.path.getsize(path)
    print("wrote %d JPEGs (%.1f MiB, %d classes) into %s" % (a.count, total / 2**20, a.classes, a.out),
          file=sys.stderr)


if __name__ == "__main__":
    main()
