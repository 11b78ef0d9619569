// Errors met in destructors. A destructor must not throw: one that does while
// the stack unwinds from another error (the usual case on a GPU, where a sticky
// CUDA error makes every later call fail too) ends the process in
// std::terminate, and the error that started it all is never printed. So a
// destructor that frees device memory, events or streams catches what its calls
// throw, reports it here and carries on; the original error surfaces from the
// call that hit it.
#pragma once

namespace strata {

// Prints "strata: <what> failed in a destructor (ignored): <why>" to stderr, once
// per distinct message (a sticky error fails every later free the same way), and
// after a few distinct ones says that further ones are not printed. Never throws.
void report_destructor_error(const char* what, const char* why) noexcept;
// The same, with `why` the message of the exception being handled; call it only
// from inside a catch block.
void report_destructor_error(const char* what) noexcept;

}  // namespace strata
