// Two custom TensorFlow ops with the kinds of bugs that take a training process down in
// native code. Built at test time against the installed TensorFlow's tf.sysconfig flags and
// loaded with tf.load_op_library, exactly as a user's own op library would be.
//
//   ScatterToSlots    Compute writes through a slot table that was never set up (a null
//                     pointer): SIGSEGV inside the op's own Compute.
//   RepeatInterleave  allocates its output for n elements but writes 2*n: the write runs
//                     past the end of the buffer and tramples the allocator's bookkeeping
//                     for the memory behind it; glibc notices later and aborts.
//   OverwriteOwnKernel  Compute tramples its own kernel object (everything after the vtable
//                     pointer) and then stores through a null pointer.

#include <cstdint>
#include <cstring>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

using tensorflow::DEVICE_CPU;
using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;

REGISTER_OP("ScatterToSlots")
    .Input("values: float")
    .Output("slots: float")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    });

REGISTER_OP("RepeatInterleave")
    .Input("values: float")
    .Output("repeated: float")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    });

REGISTER_OP("OverwriteOwnKernel")
    .Input("values: float")
    .Output("same: float")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    });

namespace {

// The table the op is supposed to fill; only a (never called) Init would allocate it.
float* g_slot_table = nullptr;

class ScatterToSlotsOp : public OpKernel {
 public:
  explicit ScatterToSlotsOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& values = ctx->input(0);
    Tensor* slots = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, values.shape(), &slots));
    auto in = values.flat<float>();
    auto out = slots->flat<float>();
    for (int64_t i = 0; i < in.size(); ++i) {
      // BUG: g_slot_table is null; the first store faults at a small address.
      volatile float* table = g_slot_table;
      table[i * 4 + 2] = in(i);
      out(i) = in(i);
    }
  }
};

class RepeatInterleaveOp : public OpKernel {
 public:
  explicit RepeatInterleaveOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& values = ctx->input(0);
    Tensor* repeated = nullptr;
    // BUG: the output should have 2*n elements; it is allocated with n.
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, values.shape(), &repeated));
    const float* in = values.flat<float>().data();
    float* out = repeated->flat<float>().data();
    const int64_t n = values.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      out[2 * i] = in[i];
      out[2 * i + 1] = in[i];
    }
  }
};

class OverwriteOwnKernelOp : public OpKernel {
 public:
  explicit OverwriteOwnKernelOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    // BUG (on purpose): a wild memset over this object, node name and op type included.
    char* self = reinterpret_cast<char*>(this);
    std::memset(self + sizeof(void*), 0xA5, sizeof(OpKernel) - sizeof(void*));
    volatile float* table = g_slot_table;
    table[3] = ctx->input(0).flat<float>()(0);
  }
};

}  // namespace

REGISTER_KERNEL_BUILDER(Name("ScatterToSlots").Device(DEVICE_CPU), ScatterToSlotsOp);
REGISTER_KERNEL_BUILDER(Name("RepeatInterleave").Device(DEVICE_CPU), RepeatInterleaveOp);
REGISTER_KERNEL_BUILDER(Name("OverwriteOwnKernel").Device(DEVICE_CPU), OverwriteOwnKernelOp);
