// Internal to the checkpoint code: owning HDF5 handles and the HDF5 error text.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace strata::h5 {

inline constexpr const char* kFormat = "strata-checkpoint";  // the root 'format' attribute
inline constexpr int64_t kVersion = 1;                       // the root 'version' attribute

// Closes an hid_t with the right H5*close when it goes out of scope.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    reset();
    id_ = o.id_;
    o.id_ = -1;
    return *this;
  }
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  hid_t release() {
    hid_t id = id_;
    id_ = -1;
    return id;
  }
  void reset() {
    if (id_ >= 0) Close(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Space = Handle<H5Sclose>;
using Type = Handle<H5Tclose>;
using Attr = Handle<H5Aclose>;
using Plist = Handle<H5Pclose>;

// A variable-length UTF-8 string type, for strings in datasets and attributes.
Type utf8_type();

// Turns off HDF5's printing of its error stack (we report errors ourselves).
void quiet();
// The innermost message on HDF5's error stack ("" when empty), e.g. "truncated file: eof = ...".
std::string last_error();

// Why `path`, which HDF5 would not open, is not an HDF5 file it can read, from
// its size and superblock: "empty (0 bytes)", "not an HDF5 file (N bytes, no
// HDF5 signature)", "truncated: N bytes of the M its superblock records", or
// "corrupt (N bytes)" with HDF5's own message when the size is not the cause.
std::string why_unopenable(const std::filesystem::path& path);

// Throws IoError "checkpoint '<path>': <what> (HDF5: <last_error()>)".
[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what);

}  // namespace strata::h5
