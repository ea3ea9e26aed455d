// An allocation that cannot succeed (64 TiB): operator new throws std::bad_alloc, nothing
// catches it, and std::terminate aborts the process. The verdict is out-of-memory, not any
// uncaught exception.
#include <cstddef>
#include <cstdio>

namespace tensorkit {

__attribute__((noinline)) char *allocate_buffer(std::size_t bytes) {
  char *buffer = new char[bytes];
  buffer[0] = 1;
  return buffer;
}

}  // namespace tensorkit

int main(int argc, char **argv) {
  (void)argv;
  char *b = tensorkit::allocate_buffer(static_cast<std::size_t>(argc) << 46);
  std::printf("%d\n", b[0]);
  return 0;
}
