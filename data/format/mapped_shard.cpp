#include "data/format/mapped_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <tuple>

#include "base/error.h"
#include "data/format/hdf5_handle.h"

namespace strata::data {
using h5::Id;

void verify_once(const std::string& path, const std::string& checksum, const std::string& manifest) {
  // A cached shard was verified when it was staged and (persistent caches) when
  // the job started; this catches one damaged in between, before any sample of
  // it is read.
  using Key = std::tuple<dev_t, ino_t, off_t, int64_t, int64_t, std::string>;
  static std::mutex mu;
  static std::set<Key> verified;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // opening reports a missing file, naming it
  Key key{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, checksum};
  {
    std::lock_guard<std::mutex> lk(mu);
    if (verified.count(key)) return;
  }
  const std::string got = checksum_file(path);  // outside the lock: other shards verify meanwhile
  if (got != checksum)
    throw IoError("shard " + path + " is damaged: manifest " + manifest + " says " + checksum +
                  ", the file has " + got + " (checked when this process first opened it)");
  std::lock_guard<std::mutex> lk(mu);
  verified.insert(std::move(key));
}

MappedShard::~MappedShard() {
  if (map_) ::munmap(map_, map_len_);
}

std::shared_ptr<const MappedShard> MappedShard::open(const std::string& path,
                                                     const std::vector<FieldSpec>& schema, bool populate,
                                                     const ShardExpectation& expect) {
  std::shared_ptr<MappedShard> s(new MappedShard());
  if (!expect.checksum.empty()) verify_once(path, expect.checksum, expect.manifest);
  if (s->try_map(path, schema, populate)) {
    expect.check_samples(path, s->samples_);  // try_map saw every dataset's first dimension equal it
  } else {
    // ShardData::read validates everything itself and names the file on failure.
    s->data_.emplace(ShardData::read(path, schema, expect));
    s->samples_ = s->data_->samples();
    s->base_.clear();
    s->stride_.clear();
    s->offsets_.clear();
    for (size_t f = 0; f < schema.size(); ++f) {
      s->base_.push_back(s->data_->field_data(f));
      s->stride_.push_back(schema[f].variable ? 0 : schema[f].bytes_per_sample());
      s->offsets_.push_back(schema[f].variable ? s->data_->field_offsets(f) : nullptr);
    }
  }
  return s;
}

// Maps the file when every field is a contiguous, unfiltered dataset of the
// expected element size and shape lying inside the file; false otherwise (the
// caller then reads it the ordinary way, which reports what is wrong).
bool MappedShard::try_map(const std::string& path, const std::vector<FieldSpec>& schema, bool populate) {
  h5::quiet_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) return false;
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid() || H5Aexists(file.get(), "samples") <= 0) return false;
  Id attr(H5Aopen(file.get(), "samples", H5P_DEFAULT), H5Aclose);
  int64_t n = 0;
  if (!attr.valid() || H5Aread(attr.get(), H5T_NATIVE_INT64, &n) < 0 || n <= 0) return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  std::vector<uint64_t> offsets;
  std::vector<int64_t> offsets_at;  // file offset of a variable field's offsets dataset, else -1
  std::vector<uint64_t> var_bytes;  // a variable field's data bytes
  for (const FieldSpec& spec : schema) {
    if (spec.variable) {
      // "<name>": u8 [total]; "<name>_offsets": i64 [n + 1]
      uint64_t got[2] = {0, 0}, count[2] = {0, 0};
      const std::string names[2] = {spec.name, spec.name + "_offsets"};
      for (int d = 0; d < 2; ++d) {
        if (H5Lexists(file.get(), names[d].c_str(), H5P_DEFAULT) <= 0) return false;
        Id ds(H5Dopen2(file.get(), names[d].c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid()) return false;
        Id plist(H5Dget_create_plist(ds.get()), H5Pclose);
        if (!plist.valid() || H5Pget_layout(plist.get()) != H5D_CONTIGUOUS ||
            H5Pget_nfilters(plist.get()) != 0)
          return false;
        Id type(H5Dget_type(ds.get()), H5Tclose);
        const size_t elem = H5Tget_size(type.get());
        if (elem != (d == 0 ? 1u : 8u) || (elem > 1 && H5Tget_order(type.get()) != H5T_ORDER_LE))
          return false;
        Id space(H5Dget_space(ds.get()), H5Sclose);
        if (H5Sget_simple_extent_ndims(space.get()) != 1) return false;
        hsize_t dim = 0;
        H5Sget_simple_extent_dims(space.get(), &dim, nullptr);
        count[d] = dim;
        haddr_t off = H5Dget_offset(ds.get());
        // an empty dataset has no storage: no offset
        if (dim == 0 && d == 0) {
          got[d] = 0;
          continue;
        }
        if (off == HADDR_UNDEF || off + dim * elem > static_cast<uint64_t>(st.st_size)) return false;
        got[d] = off;
      }
      if (count[1] != static_cast<uint64_t>(n) + 1) return false;
      offsets.push_back(got[0]);
      offsets_at.push_back(static_cast<int64_t>(got[1]));
      var_bytes.push_back(count[0]);
      stride_.push_back(0);
      continue;
    }
    if (H5Lexists(file.get(), spec.name.c_str(), H5P_DEFAULT) <= 0) return false;
    Id ds(H5Dopen2(file.get(), spec.name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.valid()) return false;
    Id plist(H5Dget_create_plist(ds.get()), H5Pclose);
    if (!plist.valid() || H5Pget_layout(plist.get()) != H5D_CONTIGUOUS || H5Pget_nfilters(plist.get()) != 0)
      return false;
    Id type(H5Dget_type(ds.get()), H5Tclose);
    size_t elem = H5Tget_size(type.get());
    if (elem > 1 && H5Tget_order(type.get()) != H5T_ORDER_LE) return false;  // the host is little-endian
    Id space(H5Dget_space(ds.get()), H5Sclose);
    int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank != static_cast<int>(spec.shape.size()) + 1) return false;
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    if (dims[0] != static_cast<hsize_t>(n)) return false;
    uint64_t bytes = elem;
    for (size_t d = 1; d < dims.size(); ++d) {
      if (dims[d] != static_cast<hsize_t>(spec.shape[d - 1])) return false;
      bytes *= dims[d];
    }
    if (static_cast<int64_t>(bytes) != spec.bytes_per_sample()) return false;
    haddr_t off = H5Dget_offset(ds.get());
    if (off == HADDR_UNDEF || off + bytes * static_cast<uint64_t>(n) > static_cast<uint64_t>(st.st_size))
      return false;
    offsets.push_back(off);
    offsets_at.push_back(-1);
    var_bytes.push_back(0);
    stride_.push_back(static_cast<int64_t>(bytes));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // MAP_POPULATE: one pass over the page tables now instead of a fault per page later.
  const int flags = MAP_PRIVATE | (populate ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, flags, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  map_ = p;
  map_len_ = static_cast<size_t>(st.st_size);
  samples_ = n;
  for (size_t f = 0; f < offsets.size(); ++f) {
    base_.push_back(static_cast<const uint8_t*>(map_) + offsets[f]);
    if (offsets_at[f] < 0) {
      offsets_.push_back(nullptr);
      continue;
    }
    // The offsets are trusted only once checked: from 0, never decreasing, to the data's size.
    const auto* off = reinterpret_cast<const int64_t*>(static_cast<const uint8_t*>(map_) + offsets_at[f]);
    bool ok = reinterpret_cast<uintptr_t>(off) % alignof(int64_t) == 0 && off[0] == 0 &&
              off[n] == static_cast<int64_t>(var_bytes[f]);
    for (int64_t i = 0; ok && i < n; ++i) ok = off[i + 1] >= off[i];
    if (!ok) {  // unmap; ShardData::read then names what is wrong
      ::munmap(map_, map_len_);
      map_ = nullptr;
      base_.clear();
      offsets_.clear();
      stride_.clear();
      return false;
    }
    offsets_.push_back(off);
  }
  return true;
}

}  // namespace strata::data
