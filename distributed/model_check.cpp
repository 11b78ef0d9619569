// The model checks of DataParallel's constructor and the collectives on whole
// tensors (see data_parallel.h): the model's entries hashed and allgathered, the
// first differing one described by every rank; broadcasts and buffer averages
// on the tensor's own memory where the communicator takes it.
#include <algorithm>

#include "base/error.h"
#include "distributed/cuda/stream_order.h"
#include "distributed/data_parallel.h"

namespace strata {

namespace {

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

struct Entry {
  std::string kind, name;
  Tensor t;
  std::string describe() const {
    return kind + " '" + name + "' " + dtype_name(t.dtype()) + " " + shape_text(t.shape());
  }
};

std::vector<Entry> entries_of(const Module& m) {
  std::vector<Entry> v;
  for (auto& [n, t] : m.named_parameters()) v.push_back({"parameter", n, t});
  for (auto& [n, t] : m.named_buffers()) v.push_back({"buffer", n, t});
  return v;
}

int64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h & 0x7fffffffffffffffull);
}

}  // namespace

void check_same_model(Communicator& comm, const Module& model) {
  const int n = comm.size();
  if (n == 1) return;
  auto entries = entries_of(model);
  std::vector<int64_t> per(entries.size());
  int64_t whole = static_cast<int64_t>(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    per[i] = fnv1a(entries[i].describe());
    whole = fnv1a(std::to_string(per[i]), static_cast<uint64_t>(whole));
  }
  std::vector<int64_t> all(static_cast<size_t>(n));
  comm.allgather(&whole, all.data(), 1, DType::i64);
  if (std::all_of(all.begin(), all.end(), [&](int64_t h) { return h == all[0]; })) return;

  // Mismatch: find the first entry that differs, and what each rank has there.
  int64_t count = static_cast<int64_t>(entries.size());
  std::vector<int64_t> counts(static_cast<size_t>(n));
  comm.allgather(&count, counts.data(), 1, DType::i64);
  size_t maxn = static_cast<size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<int64_t> mine(maxn, -1), table(maxn * static_cast<size_t>(n));
  std::copy(per.begin(), per.end(), mine.begin());
  comm.allgather(mine.data(), table.data(), maxn, DType::i64);
  size_t first = maxn;
  for (size_t i = 0; i < maxn && first == maxn; ++i)
    for (int r = 1; r < n; ++r)
      if (table[static_cast<size_t>(r) * maxn + i] != table[i]) first = i;
  if (first == maxn) first = maxn - 1;  // (hash collision in the summary: cannot happen in practice)
  constexpr size_t kText = 240;
  std::string text = first < entries.size() ? entries[first].describe()
                                            : "nothing (it has only " + std::to_string(count) + " entries)";
  std::vector<char> send(kText, 0), recv(kText * static_cast<size_t>(n));
  text.copy(send.data(), kText - 1);
  comm.allgather(send.data(), recv.data(), kText, DType::u8);
  auto at = [&](int r) { return std::string(recv.data() + static_cast<size_t>(r) * kText); };
  std::string differ, has;
  for (int r = 1; r < n; ++r)
    if (table[static_cast<size_t>(r) * maxn + first] != table[first]) {
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
      if (has.size() < 600) has += "; rank " + std::to_string(r) + " has " + at(r);
    }
  throw CommError("DataParallel: the ranks built different models: rank(s) " + differ +
                  " differ from rank 0 at entry #" + std::to_string(first) + ": rank 0 has " + at(0) + has);
}

void broadcast_model(Communicator& comm, Module& model, int root) {
  if (comm.size() == 1) return;
  for (auto& e : entries_of(model)) {
    if (!e.t.is_contiguous()) throw Error("broadcast_model: " + e.describe() + " is not contiguous");
    on_comm_memory(comm, e.t, [&](void* data) {
      comm.broadcast(data, static_cast<size_t>(e.t.numel()), e.t.dtype(), root);
    });
  }
}

void on_comm_memory(Communicator& comm, Tensor& t, const std::function<void(void*)>& op) {
  if (!t.is_contiguous()) throw Error("collective on " + t.str() + ": not contiguous");
  if (t.device() == Device::cpu || stream_ordered(comm)) return op(t.device_data());
  Tensor h = t.to(Device::cpu);  // a host communicator and device data: through a host copy
  op(h.raw_data());
  t.copy_(h);
}

}  // namespace strata
