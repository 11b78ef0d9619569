// The tolerance check the golden tests share (tests/models/golden_file.h reads the files).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace strata::testing {

// Largest |got - want| relative to the largest |want| of the tensor.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::abs(double(want[i])));
    err = std::max(err, std::abs(double(got[i]) - want[i]));
  }
  ASSERT_GT(scale, 0.0) << what << " is all zeros in the golden file";
  EXPECT_LE(err, rel * scale) << what << ": max error " << err << " vs scale " << scale;
}

}  // namespace strata::testing
