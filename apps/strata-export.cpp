// strata-export: a checkpoint's model tensors as a safetensors file (see
// docs/models.md, "Export"). Option parsing only; the work is models/checkpoint_export.
//   strata-export --checkpoint PATH|RUN_DIR --out FILE.safetensors [--dtype f32|f16|bf16]
#include <cstdio>
#include <iostream>
#include <string>

#include "apps/command_line.h"
#include "base/error.h"
#include "models/checkpoint_export.h"
#include "models/checkpoint_model.h"

namespace {

const char* kDescription =
    "Writes the checkpoint's model tensors (parameters and buffers, PyTorch-style names) as safetensors,\n"
    "loadable with safetensors.torch.load_file or safetensors.numpy.load_file. A run directory means its\n"
    "latest checkpoint (RUN_DIR/checkpoints). The file is written atomically: it appears whole or not at "
    "all.";

}  // namespace

int main(int argc, char** argv) {
  using namespace strata;
  std::string checkpoint, out, dtype = "f32";
  CLI::App app(kDescription, "strata-export");
  cli::add_version_flag(app);
  app.add_option("--checkpoint", checkpoint, "A checkpoint file (.h5) or a run directory")
      ->required()
      ->option_text("PATH|RUN_DIR");
  app.add_option("--out", out, "The safetensors file to write (replaced if it exists)")
      ->required()
      ->option_text("FILE.safetensors");
  app.add_option("--dtype", dtype, "Floating tensors as f32 (default), f16 or bf16 (round to nearest even)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  if (int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  try {
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
