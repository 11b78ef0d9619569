// Writes a strata checkpoint of the PyTorch golden GPT (tests/fixtures/gpt_golden.bin):
// strata's GPT with the golden dimensions and the golden weights copied in by
// name, saved as the trainer saves one. check_export_numpy.py exports it and
// compares the file with the golden weights.
// usage: make_golden_checkpoint GOLDEN.bin OUT.h5
#include <iostream>

#include "base/error.h"
#include "core/autograd.h"
#include "tests/models/golden_file.h"
#include "tiny_gpt.h"

int main(int argc, char** argv) {
  using namespace strata;
  if (argc != 3) {
    std::cerr << "usage: make_golden_checkpoint GOLDEN.bin OUT.h5\n";
    return 2;
  }
  try {
    auto g = testing::load_golden(argv[1]);
    // make_gpt_golden.py: VOCAB, CONTEXT, LAYERS, HEADS, WIDTH = 50, 16, 2, 4, 32
    const TrainConfig cfg = test_ckpt::gpt_config(50, 16, 2, 4, 32);
    auto model = models::build_model(models::spec_from_config(cfg));
    size_t copied = 0;
    NoGradGuard no_grad;
    for (auto& [name, p] : model->named_parameters()) {
      auto it = g.find("param/" + name);
      if (it == g.end() || it->second.shape != p.shape())
        throw Error("golden file has no parameter '" + name + "' of shape " + shape_str(p.shape()));
      p.copy_(Tensor::from_vector(it->second.f, p.shape()));
      ++copied;
    }
    save_checkpoint(test_ckpt::checkpoint_of(*model, cfg, 0), argv[2]);
    std::cerr << "make_golden_checkpoint: " << copied << " parameters -> " << argv[2] << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "make_golden_checkpoint: " << e.what() << "\n";
    return 1;
  }
}
