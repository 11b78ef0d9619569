// torch.matmul as the peer of strata-bench gemm --device cuda: a Python snippet
// in a child process (under `timeout`, so it cannot hang the bench), timed the
// same way as the C++ side: cudaEvents around each call after warm-up, the
// median (element reps/2 of the sorted times) of --reps runs, TF32 off.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "gemm_cuda.h"

namespace strata::bench {
namespace {

const char* kSnippet = R"PY(
import sys
try:
    import torch
except Exception as e:
    print("unavailable: import torch failed (%s)" % e.__class__.__name__)
    sys.exit(0)
if not torch.cuda.is_available():
    print("unavailable: torch sees no CUDA device")
    sys.exit(0)
torch.backends.cuda.matmul.allow_tf32 = False
sizes = [int(s) for s in sys.argv[1].split(",")]
names = sys.argv[2].split(",")
warm, reps = int(sys.argv[3]), int(sys.argv[4])
kinds = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
print("torch-version", torch.__version__, flush=True)
for name in names:
    for n in sizes:
        a = torch.rand(n, n, device="cuda", dtype=kinds[name]) * 2 - 1
        b = torch.rand(n, n, device="cuda", dtype=kinds[name]) * 2 - 1
        for _ in range(warm):
            torch.matmul(a, b)
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for s, e in ev:
            s.record()
            torch.matmul(a, b)
            e.record()
        torch.cuda.synchronize()
        ms = sorted(s.elapsed_time(e) for s, e in ev)
        print("torch", name, n, ms[len(ms) // 2], flush=True)
        del a, b
)PY";

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

}  // namespace

std::map<std::pair<std::string, int64_t>, double> torch_matmul_ms(const GpuGemmOptions& o, std::string& why) {
  std::map<std::pair<std::string, int64_t>, double> r;
  char path[] = "/tmp/strata-bench-torch-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    why = "not available (cannot write the Python snippet)";
    return r;
  }
  bool wrote = write(fd, kSnippet, std::char_traits<char>::length(kSnippet)) >= 0;
  close(fd);
  std::string sizes;
  for (int64_t n : o.sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(n);
  std::string cmd = "timeout 600 python3 " + std::string(path) + " " + sizes + " " + join(o.dtypes) + " " +
                    std::to_string(o.warmup) + " " + std::to_string(o.reps) + " 2>&1";
  FILE* p = wrote ? popen(cmd.c_str(), "r") : nullptr;
  std::string out, line;
  if (p) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    int status = pclose(p);
    if (status != 0) why = "not available (python3 exited with status " + std::to_string(status) + ")";
  } else {
    why = "not available (cannot run python3)";
  }
  unlink(path);
  std::istringstream in(out);
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag, name;
    int64_t n = 0;
    double ms = 0;
    if (line.rfind("unavailable: ", 0) == 0) why = "not available (" + line.substr(13) + ")";
    if (line.rfind("torch-version ", 0) == 0) std::printf("torch: %s\n", line.substr(14).c_str());
    if (ls >> tag >> name >> n >> ms && tag == "torch") r[{name, n}] = ms;
  }
  if (r.empty() && why.empty()) why = "not available (no timings from the snippet)";
  return r;
}

}  // namespace strata::bench
