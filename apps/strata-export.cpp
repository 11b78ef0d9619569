// strata-export: a checkpoint's model tensors as a safetensors file (see
// docs/models.md, "Export"). Option parsing only; the work is models/checkpoint_export.
#include <cstdio>
#include <iostream>
#include <string>

#include "base/error.h"
#include "models/checkpoint_export.h"
#include "models/checkpoint_model.h"

namespace {

const char* kUsage =
    R"(usage: strata-export --checkpoint PATH|RUN_DIR --out FILE.safetensors [--dtype f32|f16|bf16]

Writes the checkpoint's model tensors (parameters and buffers, PyTorch-style
names) as safetensors, loadable with safetensors.torch.load_file or
safetensors.numpy.load_file. A run directory means its latest checkpoint
(RUN_DIR/checkpoints). The file is written atomically: it appears whole or not at all.

  --checkpoint PATH  a checkpoint file (.h5) or a run directory
  --out FILE         the safetensors file to write (replaced if it exists)
  --dtype D          f32 (default), f16 or bf16 for floating tensors (round to nearest even)
  --help             this text
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace strata;
  try {
    std::string checkpoint, out, dtype = "f32";
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      std::string* dest = a == "--checkpoint" ? &checkpoint
                          : a == "--out"      ? &out
                          : a == "--dtype"    ? &dtype
                                              : nullptr;
      if (!dest) throw ConfigError("unknown argument '" + a + "'");
      if (i + 1 >= argc) throw ConfigError("option " + a + " needs a value");
      *dest = argv[++i];
    }
    if (checkpoint.empty() || out.empty()) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
      throw ConfigError("--dtype must be f32, f16 or bf16, got '" + dtype + "'");
    const auto path = models::resolve_checkpoint_path(checkpoint);
    const Checkpoint ck = load_checkpoint(path);
    models::export_safetensors(ck, out, dtype_from_name(dtype));
    std::cerr << "strata-export: " << path.string() << " -> " << out << " (" << ck.model.size()
              << " tensors, " << dtype << ")\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "strata-export: " << e.what() << "\n";
    return 1;
  }
}
