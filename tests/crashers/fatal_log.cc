// Dies the way TensorFlow's CHECK / LOG(FATAL) and protobuf's GOOGLE_LOG(FATAL) die: the fatal
// line is formatted into memory, written to stderr, then abort(). Where the text lives is the
// point of the exercise:
//   stack     the line is in a buffer on the crashing thread's stack (a live frame)
//   heap      the line is in a heap buffer that only a global points to
//   protobuf  a protobuf-style FATAL line in a heap buffer owned by an object on the stack
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>

namespace tensorflow {

static std::string *g_pending_message;  // keeps the heap copy reachable only from .bss

static std::string FatalPrefix(const char *file, int line) {
  char prefix[128];
  std::snprintf(prefix, sizeof prefix, "F0000 00:00:%ld.%06d %7d %s:%d] ", static_cast<long>(std::time(nullptr)),
                123456, static_cast<int>(getpid()), file, line);
  return prefix;
}

__attribute__((noinline)) void DieOnStack(long d, long dims) {
  char line[512];
  std::snprintf(line, sizeof line, "%sCheck failed: d < dims() (%ld vs. %ld)\n", FatalPrefix("tensor_shape.cc", 356).c_str(), d,
                dims);
  std::fputs(line, stderr);
  std::abort();
}

__attribute__((noinline)) void DieOnHeap(long d, long dims) {
  g_pending_message = new std::string(FatalPrefix("lrn_op.cc", 485));
  g_pending_message->append("Check failed: in_image.dims() == 4 (");
  g_pending_message->append(std::to_string(d)).append(" vs. ").append(std::to_string(dims)).append(")\n");
  std::fputs(g_pending_message->c_str(), stderr);
  std::abort();
}

struct LogMessage {
  std::string *text;
  __attribute__((noinline)) ~LogMessage() {
    std::fputs(text->c_str(), stderr);
    std::abort();
  }
};

__attribute__((noinline)) void DieProtobuf(int index, int size) {
  LogMessage message{new std::string("[libprotobuf FATAL google/protobuf/repeated_field.h:1506] CHECK failed: (index) < (current_size_): ")};
  message.text->append(std::to_string(index)).append(" >= ").append(std::to_string(size)).append("\n");
}

}  // namespace tensorflow

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "stack";
  if (std::strcmp(mode, "heap") == 0) tensorflow::DieOnHeap(argc, 4);
  if (std::strcmp(mode, "protobuf") == 0) tensorflow::DieProtobuf(argc + 5, 3);
  tensorflow::DieOnStack(argc, 1);
  return 0;
}
