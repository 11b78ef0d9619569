#include "train/logging/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace strata {
namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

// protobuf wire format: tag = (field << 3) | wire type
void put_varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
}
void put_tag(std::string& s, int field, int wire) { put_varint(s, static_cast<uint64_t>(field << 3 | wire)); }
void put_bytes(std::string& s, int field, const std::string& b) {
  put_tag(s, field, 2);
  put_varint(s, b.size());
  s += b;
}
template <typename T>
void put_fixed(std::string& s, int field, int wire, T v) {
  put_tag(s, field, wire);
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));  // little-endian host
  s.append(buf, sizeof(T));
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
std::string event(double wall, int64_t step, const std::string* version, const std::string* summary) {
  std::string e;
  put_fixed<double>(e, 1, 1, wall);
  put_tag(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  if (version) put_bytes(e, 3, *version);
  if (summary) put_bytes(e, 5, *summary);
  return e;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n) {
  static const auto table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::filesystem::create_directories(dir);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host +
          "." + std::to_string(getpid());
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_) throw IoError("cannot create TensorBoard event file " + path_ + ": " + std::strerror(errno));
  std::string version = "brain.Event:2";
  write_record(event(now_seconds(), 0, &version, nullptr));
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  // Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
  std::string v;
  put_bytes(v, 1, tag);
  put_fixed<float>(v, 2, 5, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, v);
  write_record(event(now_seconds(), step, nullptr, &summary));
}

void TensorBoardWriter::flush() {
  if (std::fflush(file_) != 0) throw IoError("cannot write TensorBoard event file " + path_);
}

void TensorBoardWriter::write_record(const std::string& data) {
  uint64_t len = data.size();
  uint32_t len_crc = masked_crc32c(&len, sizeof(len));
  uint32_t data_crc = masked_crc32c(data.data(), data.size());
  bool ok = std::fwrite(&len, sizeof(len), 1, file_) == 1 && std::fwrite(&len_crc, 4, 1, file_) == 1 &&
            (data.empty() || std::fwrite(data.data(), data.size(), 1, file_) == 1) &&
            std::fwrite(&data_crc, 4, 1, file_) == 1;
  if (!ok) throw IoError("cannot write TensorBoard event file " + path_);
}

}  // namespace strata
