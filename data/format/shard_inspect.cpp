#include "data/format/shard_inspect.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "data/format/hdf5_handle.h"

namespace strata::data {
namespace fs = std::filesystem;
using h5::Id;

namespace {

std::vector<std::string> root_datasets(hid_t file) {
  std::vector<std::string> names;
  auto cb = [](hid_t g, const char* name, const H5L_info_t*, void* out) -> herr_t {
    Id obj(H5Oopen(g, name, H5P_DEFAULT), H5Oclose);
    if (obj.valid() && H5Iget_type(obj.get()) == H5I_DATASET)
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  hsize_t idx = 0;
  H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names);
  return names;
}

int64_t root_attr_i64(hid_t file, const char* name, const std::string& path) {
  if (H5Aexists(file, name) <= 0)
    throw IoError("shard " + path + ": root attribute '" + name + "' is missing");
  Id a(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  int64_t v = 0;
  if (!a.valid() || H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0)
    throw IoError("shard " + path + ": cannot read root attribute '" + name + "'");
  return v;
}

// The "dtype" string attribute bf16 datasets carry; "" when absent.
std::string dtype_attribute(hid_t ds) {
  if (H5Aexists(ds, "dtype") <= 0) return "";
  Id a(H5Aopen(ds, "dtype", H5P_DEFAULT), H5Aclose);
  Id t(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(t.get()) != H5T_STRING || H5Tis_variable_str(t.get()) > 0) return "";
  std::string s(H5Tget_size(t.get()), '\0');
  if (H5Aread(a.get(), t.get(), s.data()) < 0) return "";
  s.erase(std::find(s.begin(), s.end(), '\0'), s.end());
  return s;
}

std::string dtype_name(hid_t type) {
  const size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      std::string name = H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "i";
      return name.append(std::to_string(8 * size));
    }
    case H5T_FLOAT:
      return std::string("f").append(std::to_string(8 * size));
    default:
      return "other (" + std::to_string(size) + " bytes)";
  }
}

ShardDataset describe(hid_t file, const std::string& name, const std::string& path) {
  Id ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw IoError("shard " + path + ": cannot open dataset '" + name + "'");
  Id type(H5Dget_type(ds.get()), H5Tclose);
  Id space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw IoError("shard " + path + ": cannot read the shape of dataset '" + name + "'");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  ShardDataset d;
  d.name = name;
  d.dtype = dtype_attribute(ds.get());
  if (d.dtype.empty()) d.dtype = dtype_name(type.get());
  d.shape.assign(dims.begin(), dims.end());
  return d;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw IoError("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void compare_with_manifest(ShardReport& r) {
  const fs::path manifest = fs::path(r.path).parent_path() / "manifest.json";
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return;
  r.manifest_path = manifest.string();
  const Manifest m = Manifest::from_json(read_text(manifest), r.manifest_path);
  r.schema = m.schema;
  const std::string name = fs::path(r.path).filename().string();
  for (const ShardInfo& s : m.shards)
    if (fs::path(s.name).filename() == name) r.manifest_entry = s;
  if (!r.manifest_entry) return;
  // An HDF5 file is always the shard as staged: decrypted or decompressed when
  // the stored object is encrypted or compressed (plain_bytes, plain_checksum).
  const ShardInfo& e = *r.manifest_entry;
  if (e.staged_bytes() != r.bytes)
    r.mismatches.push_back("size " + std::to_string(r.bytes) + " bytes, the manifest says " +
                           std::to_string(e.staged_bytes()));
  if (e.samples != r.samples)
    r.mismatches.push_back("samples " + std::to_string(r.samples) + ", the manifest says " +
                           std::to_string(e.samples));
  if (e.staged_checksum() != r.checksum)
    r.mismatches.push_back("checksum " + r.checksum + ", the manifest says " + e.staged_checksum());
}

}  // namespace

bool is_shard_file(const std::string& path) {
  h5::quiet_errors();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || H5Fis_hdf5(path.c_str()) <= 0) return false;
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  return file.valid() && H5Aexists(file.get(), "strata_format") > 0;
}

ShardReport inspect_shard(const std::string& path) {
  h5::quiet_errors();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw IoError("shard " + path + ": no such file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw IoError("shard " + path + ": not an HDF5 file");
  ShardReport r;
  r.path = path;
  r.bytes = static_cast<int64_t>(fs::file_size(path));
  {
    Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) throw IoError("shard " + path + ": cannot open (truncated or corrupt HDF5 file?)");
    r.format_version = root_attr_i64(file.get(), "strata_format", path);
    r.samples = root_attr_i64(file.get(), "samples", path);
    for (const std::string& name : root_datasets(file.get()))
      r.datasets.push_back(describe(file.get(), name, path));
  }
  r.checksum = checksum_file(path);
  compare_with_manifest(r);
  return r;
}

}  // namespace strata::data
