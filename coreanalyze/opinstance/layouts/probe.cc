// Measures the memory layout of the TensorFlow objects an op instance is read from, against the
// headers an installed TensorFlow wheel ships (tf.sysconfig.get_include()). Compiled and run by
// `python -m coreanalyze.opinstance.measure PYTHON`; prints one JSON object.
//
// Private members are measured through member pointers taken in explicit template
// instantiations (where access checks do not apply, [temp.explicit]).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "tensorflow/core/framework/device.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

using namespace tensorflow;

// offset_of<Tag>(): the byte offset of the private data member Tag names.
template <typename Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member(Tag) { return Member; }
};
#define EXPOSE(Tag, Class, Type, Name)            \
  struct Tag {                                    \
    using type = Type Class::*;                   \
    friend type member(Tag);                      \
  };                                              \
  template struct Expose<Tag, &Class::Name>;

EXPOSE(KernelNameView, OpKernel, const absl::string_view, name_view_)
EXPOSE(KernelTypeView, OpKernel, const absl::string_view, type_string_view_)
EXPOSE(ContextParams, OpKernelContext, OpKernelContext::Params*, params_)
EXPOSE(TensorShapeMember, Tensor, TensorShape, shape_)
EXPOSE(TensorBufferMember, Tensor, TensorBuffer*, buf_)
EXPOSE(ShapeNumElements, TensorShapeRep, int64_t, num_elements_)
EXPOSE(BufferData, TensorBuffer, void* const, data_)
EXPOSE(DeviceParsedName, Device, DeviceNameUtils::ParsedName, parsed_name_)

template <typename Tag>
static size_t offset_of() {
  auto pointer = member(Tag());
  ptrdiff_t raw;
  static_assert(sizeof(pointer) == sizeof(raw), "Itanium data member pointer");
  std::memcpy(&raw, &pointer, sizeof(raw));
  return static_cast<size_t>(raw);
}

// The vtable slot of a virtual member function: an Itanium C++ ABI member pointer to a virtual
// function holds 1 + the slot's byte offset in the vtable.
template <typename T>
static long slot_of(T member) {
  uintptr_t raw[2];
  static_assert(sizeof(member) == sizeof(raw), "Itanium member pointer");
  std::memcpy(raw, &member, sizeof(raw));
  return static_cast<long>((raw[0] - 1) / sizeof(void*));
}

// Which pointer-sized word of a two-word view (string_view, Span) holds the data pointer.
template <typename View>
static int data_word(const View& view, const void* data) {
  uintptr_t words[2];
  static_assert(sizeof(View) == sizeof(words), "two-word view");
  std::memcpy(words, &view, sizeof(words));
  return words[0] == reinterpret_cast<uintptr_t>(data) ? 0 : 1;
}

// The word of absl::InlinedVector<int64_t, 4> holding size << 1 | is_allocated, and where the
// heap pointer (allocated) or the elements (inlined) start.
static void inlined_vector(int* meta_word, int* data_word_allocated, int* inline_offset) {
  absl::InlinedVector<int64_t, 4> small = {7, 8};
  absl::InlinedVector<int64_t, 4> big = {1, 2, 3, 4, 5, 6};
  uintptr_t s[4], b[4];
  std::memcpy(s, &small, sizeof(s));
  std::memcpy(b, &big, sizeof(b));
  *meta_word = s[0] == (2u << 1) ? 0 : -1;
  *data_word_allocated = b[1] == reinterpret_cast<uintptr_t>(big.data()) ? 1 : -1;
  *inline_offset = static_cast<int>(reinterpret_cast<const char*>(small.data()) -
                                    reinterpret_cast<const char*>(&small));
}

int main() {
  static const char text[] = "abc";
  std::string_view sv(text, 3);
  absl::string_view asv(text, 3);
  int values[2] = {1, 2};
  absl::Span<const int> span(values, 2);
  std::string str = "a string longer than the inline buffer";
  uintptr_t str_words[4];
  std::memcpy(str_words, &str, sizeof(str_words));
  int iv_meta, iv_alloc_data, iv_inline;
  inlined_vector(&iv_meta, &iv_alloc_data, &iv_inline);

  using Params = OpKernelContext::Params;
  using ParsedName = DeviceNameUtils::ParsedName;
  std::printf("{\n");
  std::printf("  \"pointer_size\": %zu,\n", sizeof(void*));
  std::printf("  \"string_view\": {\"data_word\": %d, \"std_data_word\": %d},\n", data_word(asv, text),
              data_word(sv, text));
  std::printf("  \"span\": {\"data_word\": %d},\n", data_word(span, values));
  std::printf("  \"std_string\": {\"data_word\": %d, \"size_word\": %d},\n",
              str_words[0] == reinterpret_cast<uintptr_t>(str.data()) ? 0 : -1,
              str_words[1] == str.size() ? 1 : -1);
  std::printf("  \"inlined_vector\": {\"meta_word\": %d, \"allocated_data_word\": %d, \"inline_offset\": %d},\n",
              iv_meta, iv_alloc_data, iv_inline);
  std::printf("  \"op_kernel\": {\"compute_slot\": %ld, \"compute_async_slot\": %ld, \"name_view\": %zu, "
              "\"type_string_view\": %zu},\n",
              slot_of(&OpKernel::Compute), slot_of(&AsyncOpKernel::ComputeAsync), offset_of<KernelNameView>(),
              offset_of<KernelTypeView>());
  std::printf("  \"op_kernel_context\": {\"params\": %zu},\n", offset_of<ContextParams>());
  std::printf("  \"params\": {\"op_kernel\": %zu, \"device\": %zu, \"inputs\": %zu},\n", offsetof(Params, op_kernel),
              offsetof(Params, device), offsetof(Params, inputs));
  std::printf("  \"tensor_value\": {\"size\": %zu, \"tensor\": %zu},\n", sizeof(TensorValue),
              offsetof(TensorValue, tensor));
  std::printf("  \"tensor\": {\"shape\": %zu, \"buffer\": %zu},\n", offset_of<TensorShapeMember>(), offset_of<TensorBufferMember>());
  std::printf("  \"tensor_shape\": {\"num_elements\": %zu, \"dtype_byte\": 13, \"ndims_byte\": 14, \"tag_byte\": 15},\n",
              offset_of<ShapeNumElements>());
  std::printf("  \"tensor_buffer\": {\"data\": %zu},\n", offset_of<BufferData>());
  std::printf("  \"device\": {\"parsed_name\": %zu},\n", offset_of<DeviceParsedName>());
  std::printf("  \"parsed_name\": {\"has_job\": %zu, \"job\": %zu, \"has_replica\": %zu, \"replica\": %zu, "
              "\"has_task\": %zu, \"task\": %zu, \"has_type\": %zu, \"type\": %zu, \"has_id\": %zu, \"id\": %zu}\n",
              offsetof(ParsedName, has_job), offsetof(ParsedName, job), offsetof(ParsedName, has_replica),
              offsetof(ParsedName, replica), offsetof(ParsedName, has_task), offsetof(ParsedName, task),
              offsetof(ParsedName, has_type), offsetof(ParsedName, type), offsetof(ParsedName, has_id),
              offsetof(ParsedName, id));
  std::printf("}\n");
  return 0;
}
