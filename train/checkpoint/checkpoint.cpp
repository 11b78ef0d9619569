// Writing checkpoint files: one HDF5 file per save (layout in checkpoint.h),
// written atomically (base/atomic_file.h), as shards are staged.
//
// HDF5 builds the file in memory (the core driver without a backing store) and
// strata writes the finished image itself. HDF5 never touches the disk, so a
// full disk is one clear error from base/file_write.h, and no file handle is
// left half-closed: a failed H5Fclose of a disk file keeps its id alive, and
// the library's exit handler then crashed closing it again. The cost is a
// second copy of the checkpoint in host memory while it is written.
#include "train/checkpoint/checkpoint.h"

#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/fault_point.h"
#include "base/file_write.h"
#include "train/checkpoint/checkpoint_h5.h"

namespace strata {
namespace fs = std::filesystem;

namespace {

using h5::fail;
using h5::kFormat;
using h5::kVersion;
using h5::utf8_type;

// ---- writing

struct Writer {
  const fs::path& path;
  hid_t file;

  h5::Group group(const char* name) {
    h5::Group g(H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!g.valid()) fail(path, std::string("cannot create group ") + name);
    return g;
  }

  void check_name(const std::string& where, const std::string& name) {
    if (name.empty() || name == "." || name.find('/') != std::string::npos)
      throw IoError("checkpoint '" + path.string() + "': cannot write " + where + "/" + name +
                    ": a name must be non-empty and may not contain '/'");
  }

  void dataset(hid_t g, const std::string& where, const std::string& name, hid_t file_type, hid_t mem_type,
               const Shape& shape, const void* data) {
    check_name(where, name);
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    h5::Space space(dims.empty() ? H5Screate(H5S_SCALAR)
                                 : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    h5::Dataset d(H5Dcreate2(g, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!d.valid()) fail(path, "cannot create " + where + "/" + name);
    if (shape_numel(shape) > 0 && H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      fail(path, "cannot write " + where + "/" + name);
  }

  void tensor(hid_t g, const std::string& where, const std::string& name, const Tensor& t) {
    if (!t.defined())
      throw IoError("checkpoint '" + path.string() + "': " + where + "/" + name + " is an undefined tensor");
    // FP32 (lower-precision floats widen losslessly); integer tensors as int64;
    // device tensors are converted where they are, then copied to the host.
    bool integer = t.dtype() == DType::i32 || t.dtype() == DType::i64 || t.dtype() == DType::u8;
    Tensor c = integer ? (t.dtype() == DType::i64 ? t.contiguous() : t.to(DType::i64))
                       : (t.dtype() == DType::f32 ? t.contiguous() : t.to(DType::f32));
    c = c.to(Device::cpu);
    if (integer)
      dataset(g, where, name, H5T_STD_I64LE, H5T_NATIVE_INT64, c.shape(), c.raw_data());
    else
      dataset(g, where, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, c.shape(), c.raw_data());
  }

  void i64(hid_t g, const std::string& where, const std::string& name, int64_t v) {
    dataset(g, where, name, H5T_STD_I64LE, H5T_NATIVE_INT64, {}, &v);
  }
  void f64(hid_t g, const std::string& where, const std::string& name, double v) {
    dataset(g, where, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {}, &v);
  }
  void str(hid_t g, const std::string& where, const std::string& name, const std::string& v) {
    h5::Type t = utf8_type();
    const char* p = v.c_str();
    dataset(g, where, name, t.get(), t.get(), {}, &p);
  }

  void root_attrs() {
    h5::Space scalar(H5Screate(H5S_SCALAR));
    h5::Type t = utf8_type();
    h5::Attr fa(H5Acreate2(file, "format", t.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
    const char* p = kFormat;
    if (!fa.valid() || H5Awrite(fa.get(), t.get(), &p) < 0) fail(path, "cannot write the 'format' attribute");
    h5::Attr va(H5Acreate2(file, "version", H5T_STD_I64LE, scalar.get(), H5P_DEFAULT, H5P_DEFAULT));
    if (!va.valid() || H5Awrite(va.get(), H5T_NATIVE_INT64, &kVersion) < 0)
      fail(path, "cannot write the 'version' attribute");
  }
};

// Builds the checkpoint's HDF5 image in memory; `path` names it in errors.
std::vector<char> build_image(const Checkpoint& ck, const fs::path& path) {
  h5::Plist fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid() || H5Pset_fapl_core(fapl.get(), size_t{16} << 20, /*backing_store=*/0) < 0)
    fail(path, "cannot set up an in-memory HDF5 file");
  h5::File f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  if (!f.valid()) fail(path, "cannot create the file");
  Writer w{path, f.get()};
  w.root_attrs();
  {
    h5::Group g = w.group("/model");
    for (auto& [n, t] : ck.model) w.tensor(g.get(), "/model", n, t);
  }
  {
    h5::Group g = w.group("/optimizer");
    for (auto& [n, t] : ck.optimizer) w.tensor(g.get(), "/optimizer", n, t);
  }
  {
    h5::Group g = w.group("/trainer");
    for (auto& [k, v] : ck.ints) w.i64(g.get(), "/trainer", k, v);
    for (auto& [k, v] : ck.scalars) {
      if (ck.ints.count(k))
        throw IoError("checkpoint '" + path.string() + "': /trainer/" + k + " is both an int and a scalar");
      w.f64(g.get(), "/trainer", k, v);
    }
  }
  {
    h5::Group g = w.group("/rng");
    for (auto& [k, v] : ck.rng) w.str(g.get(), "/rng", k, v);
  }
  {
    h5::Group g = w.group("/config");
    w.str(g.get(), "/config", "resolved_yaml", ck.resolved_yaml);
  }
  {
    h5::Group g = w.group("/loader");
    for (auto& [k, v] : ck.loader) w.i64(g.get(), "/loader", k, v);
  }
  {
    h5::Group g = w.group("/schedule");
    w.str(g.get(), "/schedule", "name", ck.schedule.name);
    for (auto& [k, v] : ck.schedule.values) {
      if (k == "name")
        throw IoError("checkpoint '" + path.string() + "': schedule state key 'name' is reserved");
      w.f64(g.get(), "/schedule", k, v);
    }
  }
  if (H5Fflush(f.get(), H5F_SCOPE_GLOBAL) < 0) fail(path, "flush failed");
  const ssize_t size = H5Fget_file_image(f.get(), nullptr, 0);
  if (size < 0) fail(path, "cannot size the file image");
  std::vector<char> image(static_cast<size_t>(size));
  if (H5Fget_file_image(f.get(), image.data(), image.size()) != size)
    fail(path, "cannot copy the file image");
  return image;
}

}  // namespace

void save_checkpoint(const Checkpoint& ck, const fs::path& path) {
  h5::quiet();
  const std::vector<char> image = build_image(ck, path);
  fault_point("checkpoint.image_built", path.string());
  try {
    write_file_atomically(path, [&](const fs::path& tmp) {
      if (fault_armed("checkpoint.partial_write", path.string())) {  // a crash half-way through the bytes
        write_bytes(tmp, image.data(), image.size() / 2);
        fault_point("checkpoint.partial_write", path.string());
      }
      write_bytes(tmp, image.data(), image.size());
    });
  } catch (const IoError& e) {
    throw IoError("checkpoint '" + path.string() + "' not saved: " + e.what());
  }
}

}  // namespace strata
