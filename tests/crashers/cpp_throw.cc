// An uncaught C++ exception: std::terminate() aborts while the throwing method is still on
// the stack, so the crash thread shows a namespaced C++ method (mangled in the symbol table).
#include <stdexcept>
#include <string>

namespace tensorkit {

class ShapeChecker {
 public:
  explicit ShapeChecker(std::string name) : name_(std::move(name)) {}
  __attribute__((noinline)) int check_rank(int rank) const;

 private:
  std::string name_;
};

int ShapeChecker::check_rank(int rank) const {
  if (rank < 0) throw std::invalid_argument(name_ + ": negative rank");
  return rank;
}

}  // namespace tensorkit

int main(int argc, char **argv) {
  (void)argv;
  tensorkit::ShapeChecker checker("input");
  return checker.check_rank(-argc);
}
