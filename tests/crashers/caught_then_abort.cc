// A library refuses by throwing (ducc0's MR_assert builds "<file>: <line> (<function>):\n\n
// Assertion failure\n<reason>\n"), its caller catches the exception, prints it and aborts: the
// reason is only in the caught exception's text in the heap when the core is written.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace fftkit {

__attribute__((noinline)) void plan(unsigned long length) {
  if (length == 0) {
    std::string msg = std::string("fftkit/plan_impl.h: ") + std::to_string(2948) +
                      " (static void fftkit::plan(unsigned long)):\n\nAssertion failure\nno zero-sized FFTs\n";
    throw std::runtime_error(msg);
  }
}

__attribute__((noinline)) void c2r(unsigned long length) {
  try {
    plan(length);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "FFT c2r failed: \n%s\n", e.what());
    std::abort();
  }
}

}  // namespace fftkit

int main(int argc, char **argv) {
  (void)argv;
  fftkit::c2r(static_cast<unsigned long>(argc - 1));
  return 0;
}
