// RAII for HDF5 ids and the dtype mapping shared by shard reading and writing.
// HDF5's own error printing is silenced: every failure becomes a strata::IoError
// that names the file instead.
#pragma once
#include <hdf5.h>

#include <string>
#include <utility>

namespace strata::data::h5 {

class Id {
 public:
  Id() = default;
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  ~Id() { reset(); }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t get() const { return id_; }
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// Turns off HDF5's automatic error-stack printing for the calling thread (HDF5
// keeps the switch per thread). Every function that opens a shard calls it
// before its first HDF5 call.
void quiet_errors();

// A new file datatype for a manifest dtype ("u8", "f16", ...). f16 is an IEEE
// half that h5py reads as float16; bf16 has no HDF5 equivalent and is stored as
// 16-bit unsigned integers (the "dtype" attribute says what they are).
Id file_type(const std::string& dtype);

}  // namespace strata::data::h5
