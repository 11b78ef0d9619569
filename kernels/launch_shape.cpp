#include "kernels/launch_shape.h"

#include <string>

#include "base/error.h"

namespace strata::launch {

void collapse_dims(Shape& size, std::vector<std::vector<int64_t>*> strides) {
  Shape s;
  std::vector<std::vector<int64_t>> st(strides.size());
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 1) continue;
    s.push_back(size[d]);
    for (size_t k = 0; k < strides.size(); ++k) st[k].push_back((*strides[k])[d]);
  }
  // merge from the inside out: dimension d joins d+1 when every array walks them as one
  Shape ms;
  std::vector<std::vector<int64_t>> mst(strides.size());
  for (size_t d = s.size(); d-- > 0;) {
    bool merge = !ms.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k) merge = st[k][d] == mst[k].back() * ms.back();
    if (merge) {
      ms.back() *= s[d];  // the merged dimension keeps the inner stride
    } else {
      ms.push_back(s[d]);
      for (size_t k = 0; k < strides.size(); ++k) mst[k].push_back(st[k][d]);
    }
  }
  size.assign(ms.rbegin(), ms.rend());
  for (size_t k = 0; k < strides.size(); ++k) strides[k]->assign(mst[k].rbegin(), mst[k].rend());
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

namespace {
[[noreturn]] void too_many(const char* what, const Shape& s) {
  throw Error(std::string(what) + ": " + std::to_string(s.size()) + " dimensions remain after collapsing (" +
              shape_str(s) + "), the CUDA kernels index at most " + std::to_string(kMaxDims));
}
}  // namespace

IndexMap pack_index(Shape shape, std::vector<int64_t> strides, const char* what) {
  collapse_dims(shape, {&strides});
  if (shape.size() > static_cast<size_t>(kMaxDims)) too_many(what, shape);
  IndexMap m;
  m.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < m.ndim; ++d) {
    m.size[d] = shape[static_cast<size_t>(d)];
    m.stride[d] = strides[static_cast<size_t>(d)];
  }
  return m;
}

BinaryMap pack_broadcast(const BroadcastPlan& p, const char* what) {
  Shape s = p.out;
  std::vector<int64_t> sa = p.stride_a, sb = p.stride_b;
  collapse_dims(s, {&sa, &sb});
  if (s.size() > static_cast<size_t>(kMaxDims)) too_many(what, s);
  BinaryMap m;
  m.ndim = static_cast<int>(s.size());
  for (int d = 0; d < m.ndim; ++d) {
    auto u = static_cast<size_t>(d);
    m.size[d] = s[u];
    m.stride_a[d] = sa[u];
    m.stride_b[d] = sb[u];
  }
  return m;
}

ReducePlan reduce_plan(const Shape& in, const std::vector<bool>& reduced, const char* what) {
  // The output strides of the kept dimensions (0 for reduced ones) tell the two
  // kinds apart through the collapse, which never merges a kept with a reduced one.
  std::vector<int64_t> in_st = contiguous_strides(in), out_st(in.size(), 0);
  int64_t o = 1;
  for (size_t d = in.size(); d-- > 0;) {
    if (reduced[d]) continue;
    out_st[d] = o;
    o *= in[d];
  }
  Shape s = in;
  collapse_dims(s, {&in_st, &out_st});
  Shape ks, rs;
  std::vector<int64_t> kst, rst;
  for (size_t d = 0; d < s.size(); ++d) {
    bool red = out_st[d] == 0;
    (red ? rs : ks).push_back(s[d]);
    (red ? rst : kst).push_back(in_st[d]);
  }
  ReducePlan p;
  p.n_out = shape_numel(ks);
  p.count = shape_numel(rs);
  p.kept = pack_index(ks, kst, what);
  p.reduced = pack_index(rs, rst, what);
  p.inner_kept = !s.empty() && out_st.back() != 0;
  return p;
}

ReducePlan broadcast_reduce_plan(const Shape& from, const Shape& to, const char* what) {
  BroadcastPlan b = broadcast_plan(from, to, what);
  std::vector<bool> red(from.size());
  for (size_t d = 0; d < from.size(); ++d) red[d] = b.stride_b[d] == 0 && from[d] != 1;
  return reduce_plan(from, red, what);
}

int64_t column_splits(int64_t n_out, int64_t count, int64_t target_threads, int64_t min_rows,
                      int64_t max_splits) {
  if (n_out <= 0 || count <= min_rows) return 1;
  int64_t want = (target_threads + n_out - 1) / n_out;
  int64_t by_rows = count / std::max<int64_t>(min_rows, 1);
  return std::max<int64_t>(1, std::min({want, by_rows, max_splits}));
}

int64_t row_splits(int64_t n_out, int64_t count, int64_t target_blocks, int64_t min_per_block,
                   int64_t max_splits) {
  if (n_out <= 0 || n_out >= target_blocks || count < 2 * min_per_block) return 1;
  int64_t want = (target_blocks + n_out - 1) / n_out;
  return std::max<int64_t>(1, std::min({want, count / min_per_block, max_splits}));
}

int row_threads(int64_t count) {
  int t = 32;
  while (t < 512 && t < count) t *= 2;
  return t;
}

std::vector<Chunk> multi_tensor_chunks(const std::vector<int64_t>& numels, int64_t chunk) {
  std::vector<Chunk> out;
  for (size_t t = 0; t < numels.size(); ++t)
    for (int64_t b = 0; b < numels[t]; b += chunk)
      out.push_back({static_cast<int32_t>(t), b, std::min(numels[t], b + chunk)});
  return out;
}

}  // namespace strata::launch
