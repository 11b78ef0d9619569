// TensorBoard event files (scalars). An event file is a TFRecord stream of
// serialized tensorflow.Event protos: each record is
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// The first event carries file_version "brain.Event:2"; each scalar is an Event
// with wall_time, step and a Summary holding one Value {tag, simple_value}.
// The protobuf encoding of these few fields is written by hand (no protobuf
// dependency); tests read the files back with TensorBoard's own reader.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace strata {

class TensorBoardWriter {
 public:
  // Creates <dir>/events.out.tfevents.<time>.<host>.<pid> (dir is created).
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void add_scalar(const std::string& tag, double value, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::string path_;
  std::FILE* file_ = nullptr;
};

// CRC-32C (Castagnoli), and TFRecord's masked form.
uint32_t crc32c(const void* data, size_t n);
uint32_t masked_crc32c(const void* data, size_t n);

}  // namespace strata
