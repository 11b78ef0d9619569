// Reading checkpoint files, and the lookups that name the missing or
// ill-typed entry.
#include <cmath>
#include <vector>

#include "base/error.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_h5.h"

namespace strata {
namespace fs = std::filesystem;

namespace {

using h5::fail;
using h5::kFormat;
using h5::kVersion;
using h5::utf8_type;

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
  if (!f.valid())
    throw IoError("checkpoint '" + path.string() + "': cannot open as HDF5: " + h5::why_unopenable(path));
  return f;
}

}  // namespace

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
