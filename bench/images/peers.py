"""The peers of `strata-bench image_augment`: decode + RandomResizedCrop(224) +
horizontal flip + normalise to f32 over an ImageFolder, images/s.

  python peers.py --contestant torchvision --dir DIR --workers 1 [--batch 64]
      torchvision.datasets.ImageFolder with RandomResizedCrop(224) +
      RandomHorizontalFlip + ToTensor + Normalize (ImageNet's mean and std),
      through torch.utils.data.DataLoader with num_workers W. Each worker
      decodes, transforms and collates whole batches (default_collate runs in
      the worker); the main process only receives them, so W workers are W
      cores' work. Whichever PIL the interpreter imports decodes and resizes:
      Pillow, or Pillow-SIMD in its own venv.
  python peers.py --contestant dali --dir DIR --threads 1
      NVIDIA DALI's CPU pipeline (device_id=None): fn.readers.file ->
      fn.decoders.image(device='cpu') -> fn.random_resized_crop(224) ->
      fn.crop_mirror_normalize (coin-flip mirror, f32 CHW), num_threads T.
  --contestant dali_fused: the same with fn.decoders.image_random_crop (DALI's
      decode of the crop window only) in place of decoders.image +
      random_resized_crop, then fn.resize to 224 x 224.

One epoch over every file; the first --skip batches start the workers and are
not timed, the rest are. Prints "json {...}" with images, seconds and the CPU
seconds (user + system, every thread and worker process, from /proc) the timed
part used.
"""
import argparse
import json
import os
import sys
import time

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def proc_cpu(pid):
    """user + system CPU seconds of process `pid` so far (all its threads)."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def emit(name, threads, images, seconds, cpu_s, extra=None):
    d = {"contestant": name, "threads": threads, "images": images, "seconds": round(seconds, 4),
         "images_per_s": round(images / seconds, 2), "cpu_s": round(cpu_s, 3),
         "images_per_cpu_s": round(images / cpu_s, 2)}
    d.update(extra or {})
    print("json " + json.dumps(d), flush=True)


def run_torchvision(a):
    import PIL
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    torch.set_num_threads(1)
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    ds = datasets.ImageFolder(a.dir, transform=tf)
    # persistent workers outlive the epoch, so their CPU time can be read at its end
    dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, drop_last=False,
                    persistent_workers=True)
    it = iter(dl)
    pids = [os.getpid()] + [w.pid for w in it._workers]
    images, t0, c0 = 0, None, None
    for b, (x, _) in enumerate(it):
        if b == a.skip - 1:
            t0, c0 = time.perf_counter(), sum(proc_cpu(p) for p in pids)
        elif b >= a.skip:
            images += x.shape[0]
    seconds = time.perf_counter() - t0
    cpu = sum(proc_cpu(p) for p in pids) - c0
    name = "torchvision-pillow-simd" if "post" in PIL.__version__ else "torchvision-pillow"
    emit(name, a.workers, images, seconds, cpu, {"pil": PIL.__version__})


def run_dali(a, fused):
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def
    import nvidia.dali

    @pipeline_def(batch_size=a.batch, num_threads=a.threads, device_id=None, seed=1)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=a.dir, random_shuffle=True, name="reader")
        if fused:
            images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB)
            images = fn.resize(images, resize_x=224, resize_y=224)
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=224)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD],
                                          mirror=fn.random.coin_flip())
        return images, labels

    p = pipe()
    p.build()
    n = p.epoch_size("reader")
    iters = (n + a.batch - 1) // a.batch
    images, t0, c0 = 0, None, None
    for b in range(iters):
        out = p.run()
        if b == a.skip - 1:
            t0, c0 = time.perf_counter(), proc_cpu(os.getpid())
        elif b >= a.skip:
            images += len(out[0])
    seconds = time.perf_counter() - t0
    cpu = proc_cpu(os.getpid()) - c0
    emit("dali-fused" if fused else "dali", a.threads, images, seconds, cpu, {"dali": nvidia.dali.__version__})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--contestant", required=True, choices=["torchvision", "dali", "dali_fused"])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--skip", type=int, default=2)
    a = ap.parse_args()
    if a.contestant == "torchvision":
        run_torchvision(a)
    else:
        run_dali(a, a.contestant == "dali_fused")


if __name__ == "__main__":
    main()
