// An allocator that gives up the way TensorFlow's and XLA's BFC allocator does: it formats
// "Allocator (GPU_0_bfc) ran out of memory trying to allocate ..." into a heap buffer, writes
// it to stderr and aborts. The text is in the core's memory; the verdict is out-of-memory with
// the allocator and the size read from it.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace devicemem {

struct Bfc {
  const char *name;
  __attribute__((noinline)) void *allocate(unsigned long bytes) {
    auto *log = new std::string();
    char line[256];
    std::snprintf(line, sizeof line, "Allocator (%s) ran out of memory trying to allocate %.2fGiB (rounded to %lu)",
                  name, bytes / 1073741824.0, bytes);
    log->append(line);
    std::fprintf(stderr, "%s\n", log->c_str());
    volatile const char *keep = log->c_str();
    (void)keep;
    std::abort();
  }
};

}  // namespace devicemem

int main(int argc, char **argv) {
  (void)argv;
  devicemem::Bfc bfc{"GPU_0_bfc"};
  return bfc.allocate(static_cast<unsigned long>(argc) << 30) != nullptr;
}
