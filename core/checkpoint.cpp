// Checkpoint files: one HDF5 file per save (layout in checkpoint.h), written
// to a temporary name, fsynced and renamed, as shards are staged.
#include "core/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/checkpoint_h5.h"
#include "core/error.h"

namespace strata {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "strata-checkpoint";
constexpr int64_t kVersion = 1;

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  std::string h5 = h5::last_error();
  throw IoError("checkpoint '" + path.string() + "': " + what + (h5.empty() ? "" : " (HDF5: " + h5 + ")"));
}

h5::Type utf8_type() {
  h5::Type t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

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
    // FP32 (lower-precision floats widen losslessly); integer tensors as int64.
    bool integer = t.dtype() == DType::i32 || t.dtype() == DType::i64 || t.dtype() == DType::u8;
    Tensor c = integer ? (t.dtype() == DType::i64 ? t.contiguous() : t.to(DType::i64))
                       : (t.dtype() == DType::f32 ? t.contiguous() : t.to(DType::f32));
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

void write_file(const Checkpoint& ck, const fs::path& path) {
  h5::File f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
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
  if (H5Fclose(f.release()) < 0) fail(path, "closing the file failed");
}

void fsync_path(const fs::path& p, bool directory) {
  int fd = ::open(p.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw IoError("checkpoint: cannot open '" + p.string() + "' to fsync: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw IoError("checkpoint: fsync of '" + p.string() + "' failed: " + std::strerror(err));
}

// ---- reading

std::vector<std::string> member_names(hid_t group) {
  std::vector<std::string> names;
  auto cb = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  hsize_t idx = 0;
  H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names);
  return names;
}

struct Reader {
  const fs::path& path;
  hid_t file;

  // An optional group: invalid when absent.
  h5::Group group(const char* name) {
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return h5::Group();
    h5::Group g(H5Gopen2(file, name, H5P_DEFAULT));
    if (!g.valid()) fail(path, std::string("cannot open group ") + name);
    return g;
  }

  struct Entry {
    h5::Dataset d;
    h5::Type type;
    H5T_class_t cls;
    size_t size;
    Shape shape;
  };

  Entry open(hid_t g, const std::string& where, const std::string& name) {
    Entry e;
    std::string full = where + "/" + name;
    e.d = h5::Dataset(H5Dopen2(g, name.c_str(), H5P_DEFAULT));
    if (!e.d.valid()) fail(path, full + " is not a readable dataset");
    e.type = h5::Type(H5Dget_type(e.d.get()));
    e.cls = H5Tget_class(e.type.get());
    e.size = H5Tget_size(e.type.get());
    h5::Space s(H5Dget_space(e.d.get()));
    int rank = H5Sget_simple_extent_ndims(s.get());
    if (rank < 0) fail(path, "cannot read the shape of " + full);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(s.get(), dims.data(), nullptr);
    e.shape.assign(dims.begin(), dims.end());
    return e;
  }

  [[noreturn]] void ill_typed(const std::string& full, const std::string& expected) {
    throw IoError("checkpoint '" + path.string() + "': " + full + " has the wrong type (expected " +
                  expected + ")");
  }

  Tensor tensor(hid_t g, const std::string& where, const std::string& name) {
    Entry e = open(g, where, name);
    std::string full = where + "/" + name;
    bool f32 = e.cls == H5T_FLOAT && e.size == 4;
    bool i64 = e.cls == H5T_INTEGER && e.size == 8;
    if (!f32 && !i64) ill_typed(full, "float32 or int64 array");
    Tensor t = Tensor::empty(e.shape, f32 ? DType::f32 : DType::i64);
    if (t.numel() > 0 && H5Dread(e.d.get(), f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL,
                                 H5P_DEFAULT, t.raw_data()) < 0)
      fail(path, "cannot read " + full);
    return t;
  }

  void scalar_shape(const Entry& e, const std::string& full) {
    if (shape_numel(e.shape) != 1) ill_typed(full, "a scalar");
  }

  int64_t i64(const Entry& e, const std::string& full) {
    scalar_shape(e, full);
    int64_t v = 0;
    if (H5Dread(e.d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
      fail(path, "cannot read " + full);
    return v;
  }
  double f64(const Entry& e, const std::string& full) {
    scalar_shape(e, full);
    double v = 0;
    if (H5Dread(e.d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
      fail(path, "cannot read " + full);
    return v;
  }
  std::string str(hid_t g, const std::string& where, const std::string& name) {
    Entry e = open(g, where, name);
    std::string full = where + "/" + name;
    if (e.cls != H5T_STRING || H5Tis_variable_str(e.type.get()) <= 0)
      ill_typed(full, "a variable-length string");
    scalar_shape(e, full);
    h5::Type t = utf8_type();
    char* p = nullptr;
    if (H5Dread(e.d.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) < 0) fail(path, "cannot read " + full);
    std::string out = p ? p : "";
    if (p) H5free_memory(p);
    return out;
  }

  void check_format() {
    if (H5Aexists(file, "format") <= 0)
      throw IoError("checkpoint '" + path.string() +
                    "': not a strata checkpoint (no 'format' attribute on /)");
    h5::Attr a(H5Aopen(file, "format", H5P_DEFAULT));
    h5::Type t = utf8_type();
    char* p = nullptr;
    if (!a.valid() || H5Aread(a.get(), t.get(), &p) < 0) fail(path, "cannot read the 'format' attribute");
    std::string fmt = p ? p : "";
    if (p) H5free_memory(p);
    if (fmt != kFormat)
      throw IoError("checkpoint '" + path.string() + "': format is '" + fmt + "', expected '" + kFormat +
                    "'");
    h5::Attr v(H5Aopen(file, "version", H5P_DEFAULT));
    int64_t version = 0;
    if (!v.valid() || H5Aread(v.get(), H5T_NATIVE_INT64, &version) < 0)
      fail(path, "cannot read the 'version' attribute");
    if (version != kVersion)
      throw IoError("checkpoint '" + path.string() + "': version " + std::to_string(version) +
                    " is not supported (this build reads version " + std::to_string(kVersion) + ")");
  }
};

h5::File open_file(const fs::path& path) {
  h5::quiet();
  std::error_code ec;
  if (!fs::exists(path, ec)) throw IoError("checkpoint '" + path.string() + "': no such file");
  h5::File f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!f.valid()) {
    auto size = fs::file_size(path, ec);
    fail(path, "cannot open as HDF5: the file is truncated, corrupt or not HDF5 (" +
                   (ec ? std::string("size unknown") : std::to_string(size) + " bytes") + ")");
  }
  return f;
}

}  // namespace

void save_checkpoint(const Checkpoint& ck, const fs::path& path) {
  h5::quiet();
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  try {
    write_file(ck, tmp);
    fsync_path(tmp, false);
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec)
      throw IoError("checkpoint '" + path.string() + "': cannot rename '" + tmp.string() +
                    "' into place: " + ec.message());
    fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    fsync_path(dir, true);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

Checkpoint load_checkpoint(const fs::path& path) {
  h5::File f = open_file(path);
  Reader r{path, f.get()};
  r.check_format();
  Checkpoint ck;
  ck.source = path.string();
  if (h5::Group g = r.group("/model"); g.valid())
    for (auto& n : member_names(g.get())) ck.model.emplace(n, r.tensor(g.get(), "/model", n));
  if (h5::Group g = r.group("/optimizer"); g.valid())
    for (auto& n : member_names(g.get())) ck.optimizer.emplace(n, r.tensor(g.get(), "/optimizer", n));
  if (h5::Group g = r.group("/trainer"); g.valid()) {
    for (auto& n : member_names(g.get())) {
      auto e = r.open(g.get(), "/trainer", n);
      if (e.cls == H5T_INTEGER)
        ck.ints[n] = r.i64(e, "/trainer/" + n);
      else if (e.cls == H5T_FLOAT)
        ck.scalars[n] = r.f64(e, "/trainer/" + n);
      else
        r.ill_typed("/trainer/" + n, "an int64 or float64 scalar");
    }
  }
  if (h5::Group g = r.group("/rng"); g.valid())
    for (auto& n : member_names(g.get())) ck.rng[n] = r.str(g.get(), "/rng", n);
  if (h5::Group g = r.group("/config"); g.valid() && H5Lexists(g.get(), "resolved_yaml", H5P_DEFAULT) > 0)
    ck.resolved_yaml = r.str(g.get(), "/config", "resolved_yaml");
  if (h5::Group g = r.group("/loader"); g.valid()) {
    for (auto& n : member_names(g.get())) {
      auto e = r.open(g.get(), "/loader", n);
      if (e.cls != H5T_INTEGER) r.ill_typed("/loader/" + n, "an int64 scalar");
      ck.loader[n] = r.i64(e, "/loader/" + n);
    }
  }
  if (h5::Group g = r.group("/schedule"); g.valid()) {
    for (auto& n : member_names(g.get())) {
      if (n == "name") {
        ck.schedule.name = r.str(g.get(), "/schedule", n);
        continue;
      }
      auto e = r.open(g.get(), "/schedule", n);
      if (e.cls != H5T_FLOAT && e.cls != H5T_INTEGER) r.ill_typed("/schedule/" + n, "a float64 scalar");
      ck.schedule.values[n] = r.f64(e, "/schedule/" + n);
    }
  }
  return ck;
}

CheckpointInfo read_checkpoint_info(const fs::path& path) {
  h5::File f = open_file(path);
  Reader r{path, f.get()};
  r.check_format();
  h5::Group g = r.group("/trainer");
  if (!g.valid() || H5Lexists(g.get(), ckpt_key::step, H5P_DEFAULT) <= 0)
    throw IoError("checkpoint '" + path.string() + "': missing /trainer/step");
  CheckpointInfo info;
  info.path = path;
  auto e = r.open(g.get(), "/trainer", ckpt_key::step);
  if (e.cls != H5T_INTEGER) r.ill_typed("/trainer/step", "an int64 scalar");
  info.step = r.i64(e, "/trainer/step");
  if (H5Lexists(g.get(), ckpt_key::metric, H5P_DEFAULT) > 0) {
    auto m = r.open(g.get(), "/trainer", ckpt_key::metric);
    if (m.cls != H5T_FLOAT && m.cls != H5T_INTEGER) r.ill_typed("/trainer/metric", "a float64 scalar");
    double v = r.f64(m, "/trainer/metric");
    if (std::isfinite(v)) info.metric = v;
  }
  return info;
}

// ---- lookups

namespace {
std::string where(const Checkpoint& ck) {
  return "checkpoint '" + (ck.source.empty() ? "<in memory>" : ck.source) + "': ";
}

template <typename M>
const typename M::mapped_type& find_or_throw(const Checkpoint& ck, const M& m, const std::string& group,
                                             const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) throw IoError(where(ck) + "missing " + group + "/" + key);
  return it->second;
}
}  // namespace

const Tensor& Checkpoint::model_tensor(const std::string& name) const {
  return find_or_throw(*this, model, "/model", name);
}
const Tensor& Checkpoint::optimizer_tensor(const std::string& name) const {
  return find_or_throw(*this, optimizer, "/optimizer", name);
}
int64_t Checkpoint::int_value(const std::string& key) const {
  if (!ints.count(key) && scalars.count(key))
    throw IoError(where(*this) + "/trainer/" + key + " is float64, expected int64");
  return find_or_throw(*this, ints, "/trainer", key);
}
double Checkpoint::scalar_value(const std::string& key) const {
  if (!scalars.count(key) && ints.count(key))
    throw IoError(where(*this) + "/trainer/" + key + " is int64, expected float64");
  return find_or_throw(*this, scalars, "/trainer", key);
}
const std::string& Checkpoint::rng_state(const std::string& name) const {
  return find_or_throw(*this, rng, "/rng", name);
}
int64_t Checkpoint::loader_value(const std::string& key) const {
  return find_or_throw(*this, loader, "/loader", key);
}

}  // namespace strata
