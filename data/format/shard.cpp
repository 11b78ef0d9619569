// HDF5 shard writing and reading (layout in shard.h). Writers buffer the whole
// shard in memory and write each dataset in one call; readers read each dataset
// whole in one H5Dread, which is what makes reading a staged shard run at
// memory speed (DESIGN.md: contiguous 18 GB/s vs per-sample reads).
#include "data/format/shard.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "data/format/hdf5_handle.h"

namespace strata::data {
namespace h5 {

void quiet_errors() {
  // Per thread, not per process: thread-safe HDF5 (Debian's build) keeps an error
  // stack and its printing switch per thread, and a new thread's stack prints.
  thread_local bool quiet = false;
  if (!quiet) quiet = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
}

Id file_type(const std::string& dtype) {
  hid_t base;
  if (dtype == "u8")
    base = H5T_STD_U8LE;
  else if (dtype == "u16" || dtype == "bf16")
    base = H5T_STD_U16LE;
  else if (dtype == "i32")
    base = H5T_STD_I32LE;
  else if (dtype == "i64")
    base = H5T_STD_I64LE;
  else if (dtype == "f32")
    base = H5T_IEEE_F32LE;
  else if (dtype == "f16")
    base = H5T_IEEE_F32LE;
  else
    throw ConfigError("shard: unknown dtype '" + dtype + "'");
  Id t(H5Tcopy(base), H5Tclose);
  if (dtype == "f16") {  // sign bit 15, exponent 10..14 (bias 15), mantissa 0..9
    H5Tset_fields(t.get(), 15, 10, 5, 0, 10);
    H5Tset_size(t.get(), 2);
    H5Tset_ebias(t.get(), 15);
  }
  return t;
}

}  // namespace h5

namespace {

using h5::Id;

void check(herr_t rc, const std::string& what, const std::string& path) {
  if (rc < 0) throw IoError("HDF5 " + what + " failed for shard " + path);
}

void write_attr_i64(hid_t obj, const char* name, int64_t v, const std::string& path) {
  Id sp(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(obj, name, H5T_STD_I64LE, sp.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) throw IoError("HDF5 cannot create attribute '" + std::string(name) + "' in " + path);
  check(H5Awrite(a.get(), H5T_NATIVE_INT64, &v), std::string("write of attribute ") + name, path);
}

void write_attr_str(hid_t obj, const char* name, const std::string& v, const std::string& path) {
  Id t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), std::max<size_t>(v.size(), 1));
  Id sp(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(obj, name, t.get(), sp.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) throw IoError("HDF5 cannot create attribute '" + std::string(name) + "' in " + path);
  std::string padded = v.empty() ? std::string(1, '\0') : v;
  check(H5Awrite(a.get(), t.get(), padded.data()), std::string("write of attribute ") + name, path);
}

// One dataset of `dims` elements of `dtype`, written from `data` in one call.
void write_dataset(hid_t file, const std::string& name, const std::string& dtype, std::vector<hsize_t> dims,
                   const void* data, int deflate, const std::string& path) {
  Id type = h5::file_type(dtype);
  std::vector<hsize_t> maxdims = dims;
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (deflate > 0) {
    // Chunks of about 1 MiB along the sample axis; the sample axis is unlimited
    // so that an empty dataset still has a legal chunk shape.
    size_t row = H5Tget_size(type.get());
    for (size_t i = 1; i < dims.size(); ++i) row *= dims[i];
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::clamp<hsize_t>((1 << 20) / std::max<size_t>(row, 1), 1, std::max<hsize_t>(dims[0], 1));
    maxdims[0] = H5S_UNLIMITED;
    check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), "set_chunk", path);
    check(H5Pset_shuffle(dcpl.get()), "set_shuffle", path);
    check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate)), "set_deflate", path);
  }
  Id space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxdims.data()), H5Sclose);
  Id ds(H5Dcreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
        H5Dclose);
  if (!ds.valid()) throw IoError("HDF5 cannot create dataset '" + name + "' in " + path);
  write_attr_str(ds.get(), "dtype", dtype, path);
  if (dims[0] > 0 && data != nullptr)  // memory layout == file layout (little-endian host)
    check(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write of dataset " + name,
          path);
}

}  // namespace

struct ShardWriter::Impl {
  std::string path;
  std::vector<FieldSpec> schema;
  int deflate = 0;
  Id file;
  int64_t samples = 0;
  std::vector<std::vector<uint8_t>> data;     // per field
  std::vector<std::vector<int64_t>> offsets;  // per field (variable only)
  std::vector<int64_t> fixed;                 // per field bytes per sample
  bool finished = false;
};

ShardWriter::ShardWriter(std::string path, std::vector<FieldSpec> schema, int deflate_level)
    : impl_(std::make_unique<Impl>()) {
  h5::quiet_errors();
  if (deflate_level < 0 || deflate_level > 9)
    throw ConfigError("shard " + path + ": deflate level must be 0..9, got " + std::to_string(deflate_level));
  if (schema.empty()) throw ConfigError("shard " + path + ": empty schema");
  impl_->path = std::move(path);
  impl_->deflate = deflate_level;
  for (const auto& f : schema) {
    impl_->fixed.push_back(f.variable ? 0 : f.bytes_per_sample());
    impl_->offsets.push_back(f.variable ? std::vector<int64_t>{0} : std::vector<int64_t>{});
  }
  impl_->data.resize(schema.size());
  impl_->schema = std::move(schema);
  impl_->file = Id(H5Fcreate(impl_->path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.valid()) throw IoError("cannot create shard " + impl_->path);
}

ShardWriter::~ShardWriter() = default;

void ShardWriter::add(const std::vector<std::pair<const void*, size_t>>& fields) {
  auto& m = *impl_;
  if (m.finished) throw IoError("shard " + m.path + ": add() after finish()");
  if (fields.size() != m.schema.size())
    throw ShapeError("shard " + m.path + ": sample has " + std::to_string(fields.size()) +
                     " fields, schema has " + std::to_string(m.schema.size()));
  for (size_t f = 0; f < fields.size(); ++f)
    if (!m.schema[f].variable && static_cast<int64_t>(fields[f].second) != m.fixed[f])
      throw ShapeError("shard " + m.path + ": field '" + m.schema[f].name + "' needs " +
                       std::to_string(m.fixed[f]) + " bytes per sample, got " +
                       std::to_string(fields[f].second));
  for (size_t f = 0; f < fields.size(); ++f) {
    const auto* p = static_cast<const uint8_t*>(fields[f].first);
    m.data[f].insert(m.data[f].end(), p, p + fields[f].second);
    if (m.schema[f].variable) m.offsets[f].push_back(static_cast<int64_t>(m.data[f].size()));
  }
  ++m.samples;
}

int64_t ShardWriter::samples() const { return impl_->samples; }

int64_t ShardWriter::bytes_buffered() const {
  int64_t n = 0;
  for (size_t f = 0; f < impl_->data.size(); ++f)
    n += static_cast<int64_t>(impl_->data[f].size() + impl_->offsets[f].size() * sizeof(int64_t));
  return n;
}

void ShardWriter::finish() {
  auto& m = *impl_;
  if (m.finished) return;
  hid_t file = m.file.get();
  write_attr_i64(file, "strata_format", kManifestFormatVersion, m.path);
  write_attr_i64(file, "samples", m.samples, m.path);
  const auto n = static_cast<hsize_t>(m.samples);
  for (size_t f = 0; f < m.schema.size(); ++f) {
    const FieldSpec& spec = m.schema[f];
    if (spec.variable) {
      write_dataset(file, spec.name, "u8", {m.data[f].size()}, m.data[f].data(), m.deflate, m.path);
      write_dataset(file, spec.name + "_offsets", "i64", {n + 1}, m.offsets[f].data(), m.deflate, m.path);
    } else {
      std::vector<hsize_t> dims{n};
      for (int64_t d : spec.shape) dims.push_back(static_cast<hsize_t>(d));
      write_dataset(file, spec.name, spec.dtype, dims, m.data[f].data(), m.deflate, m.path);
    }
    std::vector<uint8_t>().swap(m.data[f]);
  }
  check(H5Fflush(file, H5F_SCOPE_LOCAL), "flush", m.path);
  check(H5Fclose(m.file.release()), "close", m.path);
  m.finished = true;
}

namespace {

int64_t read_attr_i64(hid_t obj, const char* name, const std::string& path) {
  if (H5Aexists(obj, name) <= 0) throw IoError("shard " + path + ": attribute '" + name + "' is missing");
  Id a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  int64_t v = 0;
  if (!a.valid() || H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0)
    throw IoError("shard " + path + ": cannot read attribute '" + name + "'");
  return v;
}

// Reads dataset `name` whole into `out`; returns its dimensions. The element
// size must be `elem` bytes; the data is read in the file's own type (no
// conversion), which matches the little-endian memory layout of the host.
std::vector<hsize_t> read_dataset(hid_t file, const std::string& name, size_t elem, std::vector<uint8_t>& out,
                                  const std::string& path) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0)
    throw IoError("shard " + path + ": dataset '" + name + "' is missing");
  Id ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw IoError("shard " + path + ": cannot open dataset '" + name + "'");
  Id type(H5Dget_type(ds.get()), H5Tclose);
  if (H5Tget_size(type.get()) != elem)
    throw IoError("shard " + path + ": dataset '" + name + "' has " +
                  std::to_string(H5Tget_size(type.get())) + "-byte elements, schema says " +
                  std::to_string(elem));
  Id space(H5Dget_space(ds.get()), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1) throw IoError("shard " + path + ": dataset '" + name + "' has no sample axis");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  // The dataspace is not trusted before the bytes are allocated: a damaged
  // header may claim any size. Deflate expands at most about 1032:1, so a
  // dataset holds at most ~1100 times what the file stores for it.
  const uint64_t stored = H5Dget_storage_size(ds.get());
  const uint64_t limit = stored * 1100 + (uint64_t{1} << 20);
  uint64_t n = elem;
  for (hsize_t d : dims) {
    if (d != 0 && n > limit / d)
      throw IoError("shard " + path + ": dataset '" + name +
                    "' claims more bytes than the file stores for it (" + std::to_string(stored) +
                    "): a damaged shard");
    n *= d;
  }
  out.resize(n);
  if (n > 0 && H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    throw IoError("shard " + path + ": reading dataset '" + name + "' failed (truncated or corrupt file?)");
  return dims;
}

}  // namespace

void ShardExpectation::check_samples(const std::string& path, int64_t n) const {
  if (samples >= 0 && n != samples)
    throw IoError("shard " + path + " holds " + std::to_string(n) + " samples, its entry in manifest " +
                  manifest + " says " + std::to_string(samples) +
                  " (a token shard's samples are its tokens)");
}

ShardData ShardData::read(const std::string& path, const std::vector<FieldSpec>& schema,
                          const ShardExpectation& expect) {
  h5::quiet_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) throw IoError("shard " + path + " is missing or not an HDF5 file");
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw IoError("cannot open shard " + path + " (truncated or corrupt HDF5 file?)");
  ShardData s;
  int64_t fmt = read_attr_i64(file.get(), "strata_format", path);
  if (fmt != kManifestFormatVersion)
    throw IoError("shard " + path + ": strata_format " + std::to_string(fmt) + ", expected " +
                  std::to_string(kManifestFormatVersion));
  s.samples_ = read_attr_i64(file.get(), "samples", path);
  if (s.samples_ < 0) throw IoError("shard " + path + ": negative 'samples' attribute");
  // Every dataset's first dimension is checked against the attribute below.
  expect.check_samples(path, s.samples_);
  const auto n = static_cast<hsize_t>(s.samples_);
  s.data_.resize(schema.size());
  s.offsets_.resize(schema.size());
  s.fixed_size_.assign(schema.size(), 0);
  for (size_t f = 0; f < schema.size(); ++f) {
    const FieldSpec& spec = schema[f];
    if (spec.variable) {
      auto dims = read_dataset(file.get(), spec.name, 1, s.data_[f], path);
      std::vector<uint8_t> raw;
      auto odims = read_dataset(file.get(), spec.name + "_offsets", sizeof(int64_t), raw, path);
      if (dims.size() != 1 || odims.size() != 1 || odims[0] != n + 1)
        throw IoError("shard " + path + ": '" + spec.name +
                      "_offsets' must have samples+1 = " + std::to_string(n + 1) + " entries");
      auto& off = s.offsets_[f];
      off.resize(n + 1);
      std::memcpy(off.data(), raw.data(), raw.size());
      bool ok = off.front() == 0 && off.back() == static_cast<int64_t>(s.data_[f].size());
      for (size_t i = 1; ok && i < off.size(); ++i) ok = off[i] >= off[i - 1];
      if (!ok)
        throw IoError("shard " + path + ": offsets of field '" + spec.name +
                      "' are inconsistent with its data");
    } else {
      s.fixed_size_[f] = spec.bytes_per_sample();
      size_t elem = static_cast<size_t>(s.fixed_size_[f]);
      for (int64_t d : spec.shape) elem /= static_cast<size_t>(d);
      auto dims = read_dataset(file.get(), spec.name, elem, s.data_[f], path);
      std::vector<hsize_t> want{n};
      for (int64_t d : spec.shape) want.push_back(static_cast<hsize_t>(d));
      if (dims != want) {
        auto join = [](const std::vector<hsize_t>& v) {
          std::string out;
          for (size_t k = 0; k < v.size(); ++k) {
            if (k) out += ',';
            out += std::to_string(v[k]);
          }
          return out;
        };
        const std::string got = join(dims), exp = join(want);
        throw IoError("shard " + path + ": dataset '" + spec.name + "' has shape (" + got + "), expected (" +
                      exp + ")");
      }
    }
  }
  return s;
}

const uint8_t* ShardData::sample(size_t f, int64_t i, size_t* size) const {
  if (f >= data_.size() || i < 0 || i >= samples_)
    throw ShapeError("shard sample (field " + std::to_string(f) + ", index " + std::to_string(i) +
                     ") out of range (" + std::to_string(data_.size()) + " fields, " +
                     std::to_string(samples_) + " samples)");
  if (!offsets_[f].empty()) {
    const auto b = offsets_[f][static_cast<size_t>(i)], e = offsets_[f][static_cast<size_t>(i) + 1];
    *size = static_cast<size_t>(e - b);
    return data_[f].data() + b;
  }
  *size = static_cast<size_t>(fixed_size_[f]);
  return data_[f].data() + i * fixed_size_[f];
}

int64_t ShardData::bytes() const {
  int64_t n = 0;
  for (size_t f = 0; f < data_.size(); ++f)
    n += static_cast<int64_t>(data_[f].size() + offsets_[f].size() * sizeof(int64_t));
  return n;
}

}  // namespace strata::data
