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

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/device.h"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/framework/node_properties.h"
#include "tensorflow/core/framework/op_def.pb.h"
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
EXPOSE(KernelProps, OpKernel, const std::shared_ptr<const NodeProperties>, props_)
namespace pbi = google::protobuf::internal;
// Protobuf's containers changed shape over its releases:
//   RepeatedPtrField: from 4.23 one element is kept in place of the Rep (tagged_rep_or_elem_);
//                     before, a plain Rep* (rep_).
//   Map:              from 5.x an UntypedMapBase with 32-bit counts and list-first nodes
//                     (NodeBase then key, value); a bucket is a list head, or a tree tagged by
//                     bit 0 (only in 5.x). Before, an InnerMap with size_t counts and nodes
//                     holding the key/value pair first and `next` after it; a tree bucket
//                     takes two neighbouring slots holding the same pointer.
#define TAGGED_REPEATED (PROTOBUF_VERSION >= 4023000)
#define UNTYPED_MAP (PROTOBUF_VERSION >= 5000000)
#if TAGGED_REPEATED
EXPOSE(RepeatedElements, pbi::RepeatedPtrFieldBase, void*, tagged_rep_or_elem_)
#endif
EXPOSE(RepeatedSize, pbi::RepeatedPtrFieldBase, int, current_size_)
#if UNTYPED_MAP
EXPOSE(MapElements, pbi::UntypedMapBase, pbi::map_index_t, num_elements_)
EXPOSE(MapBuckets, pbi::UntypedMapBase, pbi::map_index_t, num_buckets_)
#if PROTOBUF_VERSION < 6000000
EXPOSE(MapTable, pbi::UntypedMapBase, pbi::TableEntryPtr*, table_)
#else
EXPOSE(MapTable, pbi::UntypedMapBase, pbi::NodeBase**, table_)
#endif
#endif

template <typename Tag>
static size_t offset_of() {
  auto pointer = member(Tag());
  ptrdiff_t raw;
  static_assert(sizeof(pointer) == sizeof(raw), "Itanium data member pointer");
  std::memcpy(&raw, &pointer, sizeof(raw));
  return static_cast<size_t>(raw);
}

// Protobuf messages keep their fields in a private _impl_: the offset of a string field is found
// by setting it and looking for the word that points at the std::string the accessor returns
// (ArenaStringPtr keeps tag bits in the pointer's two low bits).
template <typename Message>
static long string_field(const Message& message, const std::string& field) {
  uintptr_t words[sizeof(Message) / sizeof(uintptr_t)];
  std::memcpy(words, &message, sizeof(words));
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); ++i) {
    if ((words[i] & ~uintptr_t{3}) == reinterpret_cast<uintptr_t>(&field)) return static_cast<long>(i * sizeof(uintptr_t));
  }
  return -1;
}

template <typename Message, typename Field>
static long field_offset(const Message& message, const Field& field) {
  return static_cast<long>(reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&message));
}

static uintptr_t word_at(const void* object, long at) {
  uintptr_t word;
  std::memcpy(&word, reinterpret_cast<const char*>(object) + at, sizeof(word));
  return word;
}

// The offset (0..64) in the block at `block` of the word equal to `value`, or -1.
static long find_word(uintptr_t block, uintptr_t value) {
  for (long at = 0; at < 64; at += sizeof(uintptr_t)) {
    if (word_at(reinterpret_cast<const void*>(block), at) == value) return at;
  }
  return -1;
}

// A RepeatedPtrField's element pointers: where its Rep (private) is and keeps them.
static void print_repeated() {
  google::protobuf::RepeatedPtrField<std::string> repeated;
  repeated.Add("a");
  repeated.Add("b");
  repeated.Add("c");
  const uintptr_t first = reinterpret_cast<uintptr_t>(&repeated.Get(0));
#if TAGGED_REPEATED
  // With more than one element the word holds Rep* | 1.
  const long elements = static_cast<long>(offset_of<RepeatedElements>());
  const uintptr_t tagged = word_at(&repeated, elements);
  const long rep_elements = (tagged & 1) ? find_word(tagged - 1, first) : -1;
  std::printf("  \"repeated_ptr\": {\"elements\": %ld, \"size\": %zu, \"rep_elements\": %ld},\n", elements,
              offset_of<RepeatedSize>(), rep_elements);
#else
  long rep = -1, rep_elements = -1;
  for (long at = 0; at + sizeof(uintptr_t) <= sizeof(repeated); at += sizeof(uintptr_t)) {
    const uintptr_t word = word_at(&repeated, at);
    if (word > 4096 && word % sizeof(uintptr_t) == 0 && find_word(word, first) >= 0) {
      rep = at;
      rep_elements = find_word(word, first);
      break;
    }
  }
  std::printf("  \"repeated_ptr\": {\"rep\": %ld, \"size\": %zu, \"rep_elements\": %ld},\n", rep,
              offset_of<RepeatedSize>(), rep_elements);
#endif
}

// A Map<string, AttrValue> with two entries: where its bucket count and table are, where a
// node keeps key, value and next. The table is recognised by the node of a known entry in it.
static void print_map() {
  NodeDef node_def;
  (*node_def.mutable_attr())["depth_radius"].set_i(3);
  (*node_def.mutable_attr())["alpha"].set_f(0.5f);
  const auto& attr_map = node_def.attr();
  auto entry = attr_map.find("alpha");
  const long value = field_offset(entry->first, entry->second);
#if UNTYPED_MAP
  const long key = static_cast<long>(sizeof(pbi::NodeBase));
  pbi::map_index_t counted;
  std::memcpy(&counted, reinterpret_cast<const char*>(&attr_map) + offset_of<MapElements>(), sizeof(counted));
  std::printf("  \"proto_map\": {\"num_buckets\": %zu, \"index_size\": %zu, \"table\": %zu, \"key\": %ld, "
              "\"value\": %ld, \"next\": 0, \"tree\": \"tagged\", \"checked\": %s},\n",
              offset_of<MapBuckets>(), sizeof(pbi::map_index_t), offset_of<MapTable>(), key, key + value,
              counted == 2 ? "true" : "false");
#else
  // InnerMap: num_elements_, num_buckets_, seed_, index_of_first_non_null_ (size_t), table_.
  const uintptr_t node = reinterpret_cast<uintptr_t>(&entry->first);
  long table = -1;
  for (long at = 4 * sizeof(size_t); at + sizeof(uintptr_t) <= sizeof(attr_map); at += sizeof(uintptr_t)) {
    const uintptr_t word = word_at(&attr_map, at);
    const size_t buckets = word_at(&attr_map, at - 3 * sizeof(size_t));
    if (word_at(&attr_map, at - 4 * sizeof(size_t)) != 2 || buckets == 0 || buckets > 1024 || word % sizeof(uintptr_t)) {
      continue;
    }
    for (size_t b = 0; b < buckets; ++b) {
      if (word_at(reinterpret_cast<const void*>(word), b * sizeof(uintptr_t)) == node) table = at;
    }
  }
  using Pair = std::pair<const std::string, AttrValue>;
  std::printf("  \"proto_map\": {\"num_buckets\": %ld, \"index_size\": %zu, \"table\": %ld, \"key\": 0, "
              "\"value\": %ld, \"next\": %zu, \"tree\": \"paired\", \"checked\": %s},\n",
              table - 3 * static_cast<long>(sizeof(size_t)), sizeof(size_t), table, value, sizeof(Pair),
              table >= 0 ? "true" : "false");
#endif
}

// Where an AttrValue keeps its oneof value and which case is set.
static void attr_value(long* value, long* oneof_case) {
  AttrValue a, b;
  a.set_i(0x1122334455667788);
  b.set_f(2.5f);
  uint32_t wa[sizeof(AttrValue) / 4], wb[sizeof(AttrValue) / 4];
  std::memcpy(wa, &a, sizeof(wa));
  std::memcpy(wb, &b, sizeof(wb));
  *value = *oneof_case = -1;
  for (size_t i = 0; i < sizeof(wa) / 4; ++i) {
    if (i + 1 < sizeof(wa) / 4 && ((uint64_t{wa[i + 1]} << 32) | wa[i]) == 0x1122334455667788u) {
      *value = static_cast<long>(i * 4);
    }
    if (wa[i] == AttrValue::kI && wb[i] == AttrValue::kF) *oneof_case = static_cast<long>(i * 4);
  }
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

  NodeDef node_def;
  OpDef op_def;
  op_def.add_input_arg()->set_name("input_grads");
  OpDef::ArgDef arg;
  arg.set_name("x");
  arg.set_type_attr("T");
  arg.set_number_attr("N");
  arg.set_type_list_attr("Tlist");
  OpDef::AttrDef attr_def;
  attr_def.set_name("alpha");
  attr_def.set_type("float");
  long attr_value_at, attr_case_at;
  attr_value(&attr_value_at, &attr_case_at);

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
  std::printf("  \"op_kernel_props\": {\"props\": %zu},\n", offset_of<KernelProps>());
  std::printf("  \"node_properties\": {\"op_def\": %zu, \"node_def\": %zu},\n", offsetof(NodeProperties, op_def),
              offsetof(NodeProperties, node_def));
  std::printf("  \"node_def\": {\"attr\": %ld},\n", field_offset(node_def, node_def.attr()));
  print_map();
  print_repeated();
  std::printf("  \"op_def\": {\"input_arg\": %ld, \"attr\": %ld},\n", field_offset(op_def, op_def.input_arg()),
              field_offset(op_def, op_def.attr()));
  std::printf("  \"arg_def\": {\"name\": %ld, \"type_attr\": %ld, \"number_attr\": %ld, \"type_list_attr\": %ld},\n",
              string_field(arg, arg.name()), string_field(arg, arg.type_attr()), string_field(arg, arg.number_attr()),
              string_field(arg, arg.type_list_attr()));
  std::printf("  \"attr_def\": {\"name\": %ld, \"type\": %ld},\n", string_field(attr_def, attr_def.name()),
              string_field(attr_def, attr_def.type()));
  std::printf("  \"attr_value\": {\"value\": %ld, \"oneof_case\": %ld, \"case_s\": %d, \"case_i\": %d, \"case_f\": %d, "
              "\"case_b\": %d, \"case_type\": %d},\n",
              attr_value_at, attr_case_at, AttrValue::kS, AttrValue::kI, AttrValue::kF, AttrValue::kB, AttrValue::kType);
  std::printf("  \"parsed_name\": {\"has_job\": %zu, \"job\": %zu, \"has_replica\": %zu, \"replica\": %zu, "
              "\"has_task\": %zu, \"task\": %zu, \"has_type\": %zu, \"type\": %zu, \"has_id\": %zu, \"id\": %zu}\n",
              offsetof(ParsedName, has_job), offsetof(ParsedName, job), offsetof(ParsedName, has_replica),
              offsetof(ParsedName, replica), offsetof(ParsedName, has_task), offsetof(ParsedName, task),
              offsetof(ParsedName, has_type), offsetof(ParsedName, type), offsetof(ParsedName, has_id),
              offsetof(ParsedName, id));
  std::printf("}\n");
  return 0;
}
