"""The synthetic image set of the loading comparison, as IDX files (what
strata-pack idx and the harness read): SIDE x SIDE x 3 u8 images, each a smooth
random colour gradient plus noise (random-ish, not compressible to nothing),
labels 0..9. Deterministic: the same arguments give the same bytes."""
import argparse
import os

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--side", type=int, default=64)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(7)
    ramp = np.linspace(0.0, 1.0, a.side, dtype=np.float32)
    with open(os.path.join(a.out, "images.idx"), "wb") as f:
        f.write(bytes([0, 0, 8, 4]))
        for d in (a.samples, a.side, a.side, 3):
            f.write(int(d).to_bytes(4, "big"))
        for start in range(0, a.samples, 1024):  # in blocks: bounded memory
            n = min(1024, a.samples - start)
            base = rng.uniform(0, 160, size=(n, 1, 1, 3)).astype(np.float32)
            gx = rng.uniform(-60, 60, size=(n, 1, 1, 3)).astype(np.float32) * ramp[None, None, :, None]
            gy = rng.uniform(-60, 60, size=(n, 1, 1, 3)).astype(np.float32) * ramp[None, :, None, None]
            noise = rng.integers(0, 48, size=(n, a.side, a.side, 3), dtype=np.uint8)
            img = np.clip(base + gx + gy + 40, 0, 207).astype(np.uint8) + noise
            f.write(img.tobytes())
    with open(os.path.join(a.out, "labels.idx"), "wb") as f:
        f.write(bytes([0, 0, 8, 1]) + int(a.samples).to_bytes(4, "big"))
        f.write((np.arange(a.samples) % 10).astype(np.uint8).tobytes())


if __name__ == "__main__":
    main()
