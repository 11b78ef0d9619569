#include "train/checkpoint/checkpoint_h5.h"

#include "base/error.h"

namespace strata::h5 {

void quiet() {
  // Per thread: thread-safe HDF5 keeps the printing switch with each thread's
  // error stack (a checkpoint may be saved or loaded from any thread).
  thread_local bool quiet = false;
  if (!quiet) quiet = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
}

namespace {
herr_t first_message(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0 && e->desc) *static_cast<std::string*>(out) = e->desc;
  return 0;
}
}  // namespace

std::string last_error() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_message, &msg);
  return msg;
}

void fail(const std::filesystem::path& path, const std::string& what) {
  std::string h5 = last_error();
  throw IoError("checkpoint '" + path.string() + "': " + what + (h5.empty() ? "" : " (HDF5: " + h5 + ")"));
}

Type utf8_type() {
  Type t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

}  // namespace strata::h5
