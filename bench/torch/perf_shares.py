"""Reading the tools' output for report.py: the GEMM peak from `strata-bench
gemm`, and a `perf report --no-children --sort symbol` table grouped into the
categories a next optimisation would target. A symbol goes to the first
category whose pattern it matches."""
import re

MEMORY = "memory (copy, zero, page faults)"
LOADER = "data loader (and its file I/O in the kernel)"
JIT = "unnamed code (oneDNN JIT)"
# (category, pattern on the symbol name); order matters: the first match wins.
CATEGORIES = [
    ("GEMM", r"gebp|gemm|general_matrix_matrix|sgemm|dgemm|gemv|GemmParallel|kernel_.*x.*_avx|TRSM"),
    ("convolution", r"conv|im2col|col2im|dnnl|jit_"),
    ("optimizer + clipping", r"sgd_step|adamw_step|adamw_f32|sgd_f32|sum_of_squares|clip_grad|Optimizer|SGD::|AdamW::|multi_tensor"),
    ("elementwise (norm, activation, pool, loss)", r"relu|batch_norm|layer_norm|max_pool|avg_pool|pool|dropout|gelu|softmax|cross_entropy|"
                    r"sdpa|attention|embedding|linear_forward|linear_backward|unary|binary|elementwise|broadcast|reduce|add_|mul_|scale|"
                    r"transpose|permute|copy_strided|strided|cast|fill|axpy|exp|tanh|log"),
    (MEMORY, r"memcpy|memmove|memset|clear_page|copy_page|page_fault|"
                                         r"do_anonymous_page|rep_movs|_mm_stream"),
    (LOADER, r"strata::data|decode|Shard|H5|hdf5|inflate|crc32|Stager|Loader|normalize"),
    ("framework (autograd, alloc, threads)", r"autograd|Autograd|Node|Tensor|Storage|shared_ptr|malloc|free|"
                                             r"operator new|operator delete|allocat|Allocator|gomp|GOMP|omp_|"
                                             r"futex|sched_|pthread|std::|strata::"),
    ("kernel (OS)", r"^\[k\]"),
    # A bare address: code perf has no symbol for. In strata's process that is
    # oneDNN's JIT kernels (the CNN's and ResNet's convolutions), which live in
    # anonymous memory; DNNL_JIT_PROFILE=1 would name them for perf.
    (JIT, r"^0x[0-9a-f]+$"),
]


HELPERS = {"each_window", "unary_forward", "unary_backward", "binary_forward", "blocked_sum", "operator"}


def short(symbol):
    """A readable name for a C++ symbol: the strata kernels it names (parallel_for
    wrappers and lambdas name theirs inside template arguments), else its head."""
    names = re.findall(r"(?:cpu(?:_dev)?|math)::(?:\(anonymous namespace\)::)?(\w+)", symbol)
    names = [n for n in dict.fromkeys(names) if n not in HELPERS] or names[:1]
    return "/".join(names)[:60] if names else symbol[:60]


# Kernel symbols of file reads and writes: the loader staging shards into its cache.
KERNEL_FILE_IO = r"copy_folio_from_iter|_copy_to_iter|copy_page_to_iter|filemap|generic_perform_write|ext4|xfs_|vfs_"


def classify(symbol, kernel):
    if kernel:
        if re.search(KERNEL_FILE_IO, symbol):
            return LOADER
        if re.search(dict(CATEGORIES)[MEMORY], symbol):
            return MEMORY
        return "kernel (OS)"
    for cat, pat in CATEGORIES:
        if re.search(pat, symbol):
            return cat
    return "other"


def shares(path):
    """{'shares': {category: fraction}, 'top': [(symbol, fraction, category)]}."""
    total, by_cat, top = 0.0, {}, []
    for line in open(path, errors="replace"):
        m = re.match(r"\s*([0-9.]+)%\s+\[(.)\]\s+(.*\S)", line)
        if not m:
            continue
        pct, kind, sym = float(m.group(1)) / 100, m.group(2), re.split(r"\s{2,}", m.group(3).strip())[0]
        cat = classify(sym, kind == "k")
        by_cat[cat] = by_cat.get(cat, 0.0) + pct
        total += pct
        top.append((short(sym), pct, cat))
    top.sort(key=lambda t: -t[1])
    return {"shares": {c: v / total for c, v in by_cat.items()} if total else {}, "top": top[:15]}


def gemm_peak(path):
    """The fastest fp32 GEMM of the run (any library, any size) and the nominal peak."""
    text = open(path).read()
    best, at = 0.0, ""
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0].isdigit():
            for name, v in zip(("strata", "eigen", "openblas"), cols[1:4]):
                if float(v) > best:
                    best, at = float(v), f"{name} at n={cols[0]}"
    nominal = re.search(r"= ([0-9.]+) GFLOP/s", text)
    return {"peak_gflops": best, "peak_source": at, "nominal_gflops": float(nominal.group(1)) if nominal else 0.0,
            "raw": text}
