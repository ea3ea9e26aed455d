// An uncaught C++ exception of the program's own type (derived from std::runtime_error), thrown
// after a few exceptions that were caught and freed: the analysis must find the one
// std::terminate is handling, read its type from its type_info and what() from the object.
#include <stdexcept>
#include <string>

namespace tensorkit {

struct ShapeError : std::runtime_error {
  explicit ShapeError(const std::string &what) : std::runtime_error(what) {}
};

__attribute__((noinline)) int probe(int i) {
  if (i % 2) throw std::logic_error("probe " + std::to_string(i) + " was caught");
  return i;
}

__attribute__((noinline)) void reshape(int rank) {
  if (rank < 0) throw ShapeError("cannot reshape a tensor of rank " + std::to_string(rank) + " to [2, -1]");
}

}  // namespace tensorkit

int main(int argc, char **argv) {
  (void)argv;
  int seen = 0;
  for (int i = 0; i < 6; ++i) {
    try {
      seen += tensorkit::probe(i);
    } catch (const std::logic_error &) {
      ++seen;
    }
  }
  tensorkit::reshape(-argc - seen);
  return 0;
}
