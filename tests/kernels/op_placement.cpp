#include "op_placement.h"

#include <string>

#include "base/error.h"
#include "kernels/device_ops_backends.h"
#include "kernels/runtime/allocator.h"
#include "op_harness.h"

namespace strata::testing {
namespace {

// Every copy here has a device side, and dev::copy (kernels/device_ops.h) hands
// such copies to cuda_dev::copy unchanged; calling it directly keeps the op test
// binaries from linking the cpu device ops, which they do not use.
void copy_bytes(const TensorView& src, const TensorView& dst) { cuda_dev::copy(src, dst); }

// The whole byte range of a buffer as a u8 view, so the copy moves the guard too.
TensorView byte_view(void* p, size_t n, Device d) {
  return TensorView{p, DType::u8, {static_cast<int64_t>(n)}, d};
}

}  // namespace

// Device memory holding one host Buffer's bytes.
struct Placement::Block {
  Allocator& alloc;
  size_t n;
  void* p;
  Block(Allocator& a, size_t bytes) : alloc(a), n(bytes), p(a.allocate(bytes)) {}
  ~Block() { alloc.deallocate(p, n); }
};

Placement::Placement(Device d) : device_(d) {
  if (d == Device::cpu) return;
  alloc_ = &allocator_for(d);
  copy_ = copy_bytes;
}
Placement::Placement(Device d, Allocator& alloc, CopyFn copy) : device_(d), alloc_(&alloc), copy_(copy) {}
Placement::~Placement() = default;

TensorView Placement::place(const Buffer& b) {
  if (device_ == Device::cpu || !b.view.defined()) return b.view;
  if (blocks_.count(&b)) throw Error("op test placement: a buffer was placed twice");
  auto block = std::make_unique<Block>(*alloc_, b.bytes.size());
  copy_(byte_view(const_cast<std::byte*>(b.bytes.data()), b.bytes.size(), Device::cpu),
        byte_view(block->p, block->n, device_));
  TensorView v = b.view;
  v.data = block->p;
  v.device = device_;
  blocks_[&b] = std::move(block);
  return v;
}

void Placement::fetch(Buffer& b) {
  auto it = blocks_.find(&b);
  if (it == blocks_.end()) return;
  copy_(byte_view(it->second->p, it->second->n, device_),
        byte_view(b.bytes.data(), b.bytes.size(), Device::cpu));
}

}  // namespace strata::testing
