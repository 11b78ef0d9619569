// The safetensors writer and reader: exact round trips, the byte layout the
// format prescribes (checked on the raw bytes, not through the reader), dtype
// conversion, and rejection of damaged files and bad input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/random.h"
#include "kernels/runtime/half.h"
#include "tiny_gpt.h"
#include "train/checkpoint/safetensors.h"

using namespace strata;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void put_bytes(const fs::path& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

std::string raw(const Tensor& t) {
  Tensor c = t.contiguous();
  return {static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.numel()) * dtype_size(c.dtype())};
}

SafetensorsContent sample() {
  Generator gen(3);
  SafetensorsContent c;
  c.tensors["h.0.attn.c_attn.weight"] = Tensor::normal({6, 4}, 0, 1, gen);
  c.tensors["bias"] = Tensor::normal({5}, 0, 1, gen);
  c.tensors["scalar"] = Tensor::scalar(2.5);
  c.tensors["empty"] = Tensor::zeros({0, 3});
  c.tensors["counts"] = Tensor::from_vector_i64({-1, 0, int64_t{1} << 40}, {3});
  c.tensors["half"] = Tensor::normal({3}, 0, 1, gen).to(DType::f16);
  c.metadata = {{"format", "pt"}, {"note", "multi\nline \"quoted\" text"}};
  return c;
}

void expect_same(const SafetensorsContent& got, const SafetensorsContent& want) {
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (auto& [name, w] : want.tensors) {
    ASSERT_TRUE(got.tensors.count(name)) << name;
    const Tensor& g = got.tensors.at(name);
    EXPECT_EQ(g.dtype(), w.dtype()) << name;
    EXPECT_EQ(g.shape(), w.shape()) << name;
    EXPECT_EQ(raw(g), raw(w)) << name;
  }
  EXPECT_EQ(got.metadata, want.metadata);
}

}  // namespace

TEST(Safetensors, RoundTripIsExact) {
  test_ckpt::TempDir dir("strata-st");
  const auto c = sample();
  write_safetensors(dir.path() / "a.safetensors", c);
  expect_same(read_safetensors(dir.path() / "a.safetensors"), c);
}

TEST(Safetensors, LayoutOnTheRawBytes) {
  test_ckpt::TempDir dir("strata-st");
  const auto c = sample();
  write_safetensors(dir.path() / "a.safetensors", c);
  const std::string b = bytes_of(dir.path() / "a.safetensors");
  ASSERT_GE(b.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | static_cast<unsigned char>(b[static_cast<size_t>(i)]);  // little-endian
  ASSERT_LE(8 + n, b.size());
  EXPECT_EQ(n % 8, 0u) << "the header is padded to a multiple of 8 bytes";
  const std::string text = b.substr(8, n);
  EXPECT_EQ(text.front(), '{');
  EXPECT_EQ(text.find_last_not_of(' '), text.rfind('}')) << "padding is spaces after the JSON";
  json h = json::parse(text);
  EXPECT_EQ(h["__metadata__"]["note"], c.metadata.at("note"));
  uint64_t covered = 0;
  for (auto& [name, t] : c.tensors) {
    ASSERT_TRUE(h.contains(name)) << name;
    const json& e = h[name];
    EXPECT_EQ(e["dtype"], safetensors_dtype_name(t.dtype())) << name;
    EXPECT_EQ(e["shape"].get<Shape>(), t.shape()) << name;
    const auto begin = e["data_offsets"][0].get<uint64_t>(), end = e["data_offsets"][1].get<uint64_t>();
    EXPECT_EQ(begin % dtype_size(t.dtype()), 0u) << name << " is not aligned to its element size";
    EXPECT_EQ(b.substr(8 + n + begin, end - begin), raw(t)) << name;
    covered += end - begin;
  }
  EXPECT_EQ(8 + n + covered, b.size()) << "the data is exactly the tensors' bytes";
  EXPECT_EQ(h["counts"]["dtype"], "I64");
  EXPECT_EQ(h["half"]["dtype"], "F16");
  EXPECT_EQ(h["scalar"]["shape"], json::array());
}

TEST(Safetensors, FloatDtypeConvertsFloatsOnly) {
  test_ckpt::TempDir dir("strata-st");
  const auto c = sample();
  for (DType dt : {DType::f16, DType::bf16}) {
    write_safetensors(dir.path() / "h.safetensors", c, dt);
    auto got = read_safetensors(dir.path() / "h.safetensors");
    const Tensor& w = got.tensors.at("h.0.attn.c_attn.weight");
    ASSERT_EQ(w.dtype(), dt);
    // each element rounded to nearest even, as kernels/runtime/half.h defines it
    auto src = c.tensors.at("h.0.attn.c_attn.weight").to_float_vector();
    const auto* bits = w.data<uint16_t>();
    for (size_t i = 0; i < src.size(); ++i)
      EXPECT_EQ(bits[i], dt == DType::f16 ? float_to_f16_bits(src[i]) : float_to_bf16_bits(src[i])) << i;
    EXPECT_EQ(got.tensors.at("counts").dtype(), DType::i64);
    EXPECT_EQ(raw(got.tensors.at("counts")), raw(c.tensors.at("counts")));
  }
}

TEST(Safetensors, RejectsDamagedFiles) {
  test_ckpt::TempDir dir("strata-st");
  const fs::path p = dir.path() / "a.safetensors", bad = dir.path() / "bad.safetensors";
  write_safetensors(p, sample());
  const std::string b = bytes_of(p);
  auto expect_rejected = [&](const std::string& bytes, const std::string& says) {
    put_bytes(bad, bytes);
    try {
      read_safetensors(bad);
      ADD_FAILURE() << "accepted a file that should fail with '" << says << "'";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    }
  };
  expect_rejected(b.substr(0, b.size() - 1), "truncated or padded");
  expect_rejected(b + "x", "truncated or padded");
  expect_rejected(b.substr(0, 5), "shorter than the 8-byte header length");
  std::string huge = b;
  huge[7] = '\x7f';
  expect_rejected(huge, "exceeds the file");
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  std::string text = b.substr(8, n);
  auto with_header = [&](std::string t) {
    t.append((8 - t.size() % 8) % 8, ' ');
    uint64_t len = t.size();
    return std::string(reinterpret_cast<const char*>(&len), 8) + t + b.substr(8 + n);
  };
  json h = json::parse(text);
  json gap = h;
  gap["bias"]["data_offsets"][0] = gap["bias"]["data_offsets"][0].get<uint64_t>() + 4;
  gap["bias"]["data_offsets"][1] = gap["bias"]["data_offsets"][1].get<uint64_t>() + 4;
  expect_rejected(with_header(gap.dump()), "must be contiguous");
  json shape = h;
  shape["bias"]["shape"] = {6};
  expect_rejected(with_header(shape.dump()), "tensor 'bias': data_offsets");
  json dtype = h;
  dtype["bias"]["dtype"] = "C64";
  expect_rejected(with_header(dtype.dump()), "dtype 'C64'");
  expect_rejected(with_header("[1, 2]"), "not a JSON object");
}

TEST(Safetensors, BadInputLeavesTheOldFileAndNoTemporary) {
  test_ckpt::TempDir dir("strata-st");
  const fs::path p = dir.path() / "a.safetensors";
  write_safetensors(p, sample());
  const std::string before = bytes_of(p);
  for (const char* name : {"__metadata__", ""}) {
    auto c = sample();
    c.tensors[name] = Tensor::zeros({2});
    EXPECT_THROW(write_safetensors(p, c), IoError) << "name '" << name << "'";
  }
  auto c = sample();
  c.tensors["undefined"] = Tensor();
  EXPECT_THROW(write_safetensors(p, c), IoError);
  EXPECT_EQ(bytes_of(p), before);
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "a temporary was left behind";
}
