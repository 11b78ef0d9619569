// Figures summed over the ranks (f64 allreduce), as every trainer component
// sums its counters; the identity with one rank.
#pragma once
#include <vector>

#include "core/communicator.h"

namespace strata {

inline std::vector<double> allreduce_sums(Communicator& comm, std::vector<double> v) {
  if (comm.size() > 1) comm.allreduce(v.data(), v.size(), DType::f64, ReduceOp::sum);
  return v;
}

}  // namespace strata
