// bfloat16 GEMM through oneDNN's matmul primitive, or float32 where the CPU lacks bfloat16
// instructions; see gemm_bf16.h.
#include "weft/kernels/gemm_bf16.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "weft/core/logging.h"
#include "weft/core/mutex.h"
#include "weft/core/tensor.h"
#include "weft/kernels/bias_activation.h"
#include "weft/kernels/onednn_util.h"

namespace weft::kernels {
namespace {

using dnnl::memory;

std::atomic<bool> force_fallback{false};

// oneDNN's ISA values are bit sets that include every ISA below them; AMX's includes BF16's.
bool CpuMultipliesBFloat16() {
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    constexpr auto kBf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
    const bool has = (isa & kBf16) == kBf16;
    if (!has) {
      WEFT_LOG(INFO) << "this CPU has neither AVX512-BF16 nor AMX (oneDNN ISA 0x" << std::hex << isa
                     << "): bfloat16 matrix products run in float32 and are rounded back";
    }
    return has;
  }();
  return native;
}

// What the primitive does to each element of C as it writes it: add the bias of its column, then
// the activation (a float32 C only).
struct Epilogue {
  const float* bias = nullptr;  // [n], or null
  FusedActivation activation = FusedActivation::kNone;
};

// The primitive for one block's shape, and its scratchpad's size.
struct MatMulPrimitive {
  dnnl::matmul matmul;
  memory::desc a_md, b_md, bias_md, c_md, scratchpad_md;
};

// m, n, k, lda, ldb, ldc, transpose_a, transpose_b, whether C is float32, with a bias, with ReLU.
using Key = std::array<int64_t, 11>;

template <typename C>
constexpr bool kFloatOutput = std::is_same_v<C, float>;

class PrimitiveCache {
 public:
  // The primitive for `d` with these leading dimensions, built on first use.
  StatusOr<std::shared_ptr<const MatMulPrimitive>> Get(const GemmDims& d, int64_t lda, int64_t ldb,
                                                       int64_t ldc, bool float_output,
                                                       const Epilogue& epilogue) {
    const bool with_bias = epilogue.bias != nullptr;
    const bool relu = epilogue.activation == FusedActivation::kRelu;
    const Key key = {d.m,           d.n,           d.k,          lda,       ldb, ldc,
                     d.transpose_a, d.transpose_b, float_output, with_bias, relu};
    {
      MutexLock lock(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    UseOneOpenMpThread();
    auto made = std::make_shared<MatMulPrimitive>();
    try {
      // Strides say where op() transposes: a transposed operand is read column by column.
      made->a_md = memory::desc({d.m, d.k}, memory::data_type::bf16,
                                d.transpose_a ? memory::dims{1, lda} : memory::dims{lda, 1});
      made->b_md = memory::desc({d.k, d.n}, memory::data_type::bf16,
                                d.transpose_b ? memory::dims{1, ldb} : memory::dims{ldb, 1});
      made->c_md =
          memory::desc({d.m, d.n}, float_output ? memory::data_type::f32 : memory::data_type::bf16,
                       memory::dims{ldc, 1});
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (relu) {
        dnnl::post_ops post_ops;
        post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(post_ops);
      }
      // The bias is added in the kernel's epilogue, while each tile of C is still in registers.
      if (with_bias) {
        made->bias_md = memory::desc({1, d.n}, memory::data_type::f32, memory::dims{d.n, 1});
      }
      const dnnl::matmul::primitive_desc pd(
          with_bias ? dnnl::matmul::desc(made->a_md, made->b_md, made->bias_md, made->c_md)
                    : dnnl::matmul::desc(made->a_md, made->b_md, made->c_md),
          attr, OneDnnCpuEngine());
      made->scratchpad_md = pd.scratchpad_desc();
      made->matmul = dnnl::matmul(pd);
    } catch (const dnnl::error& e) {
      return Status(Code::kInternal, StrCat("oneDNN bfloat16 matmul ", d.m, "x", d.n, "x", d.k,
                                            " cannot be built: ", e.what()));
    }
    MutexLock lock(mu_);
    // Shapes rarely change between steps; a model whose shapes keep changing starts over.
    if (cache_.size() >= 256) cache_.clear();
    return cache_.emplace(key, std::move(made)).first->second;
  }

 private:
  Mutex mu_;
  std::map<Key, std::shared_ptr<const MatMulPrimitive>> cache_ WEFT_GUARDED_BY(mu_);
};

PrimitiveCache& Cache() {
  static auto* cache = new PrimitiveCache();
  return *cache;
}

// Runs `primitive` on this thread.
template <typename C>
Status Execute(const MatMulPrimitive& primitive, const bfloat16* a, const bfloat16* b,
               const float* bias, C* c) {
  UseOneOpenMpThread();
  const int64_t scratch_bytes = static_cast<int64_t>(primitive.scratchpad_md.get_size());
  WEFT_ASSIGN_OR_RETURN(
      Tensor scratchpad,
      Tensor::Allocate(DataType::kUInt8, TensorShape({std::max<int64_t>(1, scratch_bytes)})));
  try {
    dnnl::engine& engine = OneDnnCpuEngine();
    // oneDNN takes non-const pointers but only reads its inputs.
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(primitive.a_md, engine, const_cast<bfloat16*>(a))},
        {DNNL_ARG_WEIGHTS, memory(primitive.b_md, engine, const_cast<bfloat16*>(b))},
        {DNNL_ARG_DST, memory(primitive.c_md, engine, c)},
        {DNNL_ARG_SCRATCHPAD, memory(primitive.scratchpad_md, engine, scratchpad.raw_data())}};
    if (bias != nullptr) {
      args.emplace(DNNL_ARG_BIAS, memory(primitive.bias_md, engine, const_cast<float*>(bias)));
    }
    dnnl::stream stream(engine);
    primitive.matmul.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return Internal("oneDNN bfloat16 matmul failed: ", e.what());
  }
  return Status::OK();
}

// C's split into blocks of whole rows (or columns, when C is wide), one per intra-op thread, as
// ParallelGemm does.
struct Blocks {
  bool split_rows = true;
  int64_t extent = 0;  // rows or columns of C
  int64_t step = 0;    // rows or columns per block (the last may have fewer)
  int64_t count = 1;
};

Blocks PlanBlocks(OpKernelContext* context, const GemmDims& d, bool split) {
  Blocks blocks;
  blocks.split_rows = d.m >= d.n;
  blocks.extent = blocks.split_rows ? d.m : d.n;
  blocks.step = blocks.extent;
  const int64_t threads = context->device()->intra_op_threads();
  if (!split || threads <= 1 || d.m * d.n * d.k < kMinParallelGemmWork) return blocks;
  constexpr int64_t kAlign = 16;  // whole SIMD-friendly multiples, so that no block is a sliver
  const int64_t wanted = std::clamp<int64_t>(blocks.extent / kAlign, 1, threads);
  const int64_t size = (blocks.extent + wanted - 1) / wanted;
  blocks.step = (size + kAlign - 1) / kAlign * kAlign;
  blocks.count = (blocks.extent + blocks.step - 1) / blocks.step;
  return blocks;
}

template <typename C>
Status NativeGemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
                  const bfloat16* b, int64_t ldb, C* c, int64_t ldc, bool split,
                  const Epilogue& epilogue) {
  const Blocks blocks = PlanBlocks(context, d, split);
  // Every block but the last has the full step: at most two shapes, built before any runs.
  std::vector<std::shared_ptr<const MatMulPrimitive>> primitives(blocks.count);
  for (int64_t i = 0; i < blocks.count; ++i) {
    const int64_t size = std::min(blocks.step, blocks.extent - i * blocks.step);
    if (i > 0 && size == blocks.step) {
      primitives[i] = primitives[i - 1];
      continue;
    }
    GemmDims part = d;
    (blocks.split_rows ? part.m : part.n) = size;
    WEFT_ASSIGN_OR_RETURN(primitives[i],
                          Cache().Get(part, lda, ldb, ldc, kFloatOutput<C>, epilogue));
  }
  std::vector<Status> statuses(blocks.count);
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const int64_t begin = i * blocks.step;
      if (blocks.split_rows) {
        // Row i of op(A) is row i of A, or column i of A when transposed.
        statuses[i] = Execute(*primitives[i], a + (d.transpose_a ? begin : begin * lda), b,
                              epilogue.bias, c + begin * ldc);
      } else {
        // Column j of op(B) is column j of B, or row j of B when transposed.
        statuses[i] =
            Execute(*primitives[i], a, b + (d.transpose_b ? begin * ldb : begin),
                    epilogue.bias == nullptr ? nullptr : epilogue.bias + begin, c + begin);
      }
    }
  };
  if (blocks.count == 1) {
    run(0, 1);
  } else {
    ParallelFor(context, blocks.count, 1e12, run);
  }
  for (Status& status : statuses) WEFT_RETURN_IF_ERROR(status);
  return Status::OK();
}

// A float32 copy of the `rows` x `cols` matrix at `in` (leading dimension ld).
StatusOr<Tensor> Widen(const bfloat16* in, int64_t rows, int64_t cols, int64_t ld) {
  const int64_t span = (rows - 1) * ld + cols;
  WEFT_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DataType::kFloat, TensorShape({span})));
  BFloat16ToFloat({in, static_cast<size_t>(span)}, out.data<float>());
  return out;
}

template <typename C>
Status FloatGemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
                 const bfloat16* b, int64_t ldb, C* c, int64_t ldc, bool split) {
  WEFT_ASSIGN_OR_RETURN(Tensor a32,
                        Widen(a, d.transpose_a ? d.k : d.m, d.transpose_a ? d.m : d.k, lda));
  WEFT_ASSIGN_OR_RETURN(Tensor b32,
                        Widen(b, d.transpose_b ? d.n : d.k, d.transpose_b ? d.k : d.n, ldb));
  // A float32 C takes the product directly; a bfloat16 one through a float32 copy, rounded.
  Tensor c32;
  float* product = nullptr;
  int64_t ld_product = ldc;
  if constexpr (kFloatOutput<C>) {
    product = c;
  } else {
    WEFT_ASSIGN_OR_RETURN(c32, Tensor::Allocate(DataType::kFloat, TensorShape({d.m, d.n})));
    product = c32.data<float>();
    ld_product = d.n;
  }
  if (split) {
    ParallelGemm(context, d, 1.0f, a32.data<float>(), lda, b32.data<float>(), ldb, 0.0f, product,
                 ld_product);
  } else {
    Gemm(d, 1.0f, a32.data<float>(), lda, b32.data<float>(), ldb, 0.0f, product, ld_product);
  }
  if constexpr (!kFloatOutput<C>) {
    for (int64_t i = 0; i < d.m; ++i) {
      FloatToBFloat16({product + i * d.n, static_cast<size_t>(d.n)}, c + i * ldc);
    }
  }
  return Status::OK();
}

template <typename C>
Status AnyGemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
               const bfloat16* b, int64_t ldb, C* c, int64_t ldc, bool split,
               const Epilogue& epilogue = {}) {
  if (d.m == 0 || d.n == 0) return Status::OK();
  if (d.k != 0 && BFloat16GemmIsNative()) {
    return NativeGemm(context, d, a, lda, b, ldb, c, ldc, split, epilogue);
  }
  if (d.k == 0) {
    for (int64_t i = 0; i < d.m; ++i) std::fill_n(c + i * ldc, d.n, C());
  } else {
    WEFT_RETURN_IF_ERROR(FloatGemm(context, d, a, lda, b, ldb, c, ldc, split));
  }
  if constexpr (kFloatOutput<C>) {
    // Without the primitive's epilogue: a pass over C after the product.
    if (epilogue.bias != nullptr || epilogue.activation != FusedActivation::kNone) {
      std::vector<float> zeros;
      const float* bias = epilogue.bias;
      if (bias == nullptr) {
        zeros.assign(static_cast<size_t>(d.n), 0.0f);
        bias = zeros.data();
      }
      // Only BFloat16GemmBiasActivation passes an epilogue, and its C is contiguous.
      AddBiasAndActivation(context, c, d.m, d.n, bias, epilogue.activation);
    }
  }
  return Status::OK();
}

}  // namespace

bool BFloat16GemmIsNative() {
  return !force_fallback.load(std::memory_order_relaxed) && CpuMultipliesBFloat16();
}

void ForceBFloat16GemmFallbackForTesting(bool force) {
  force_fallback.store(force, std::memory_order_relaxed);
}

Status BFloat16Gemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
                    const bfloat16* b, int64_t ldb, bfloat16* c, int64_t ldc, bool split) {
  return AnyGemm(context, d, a, lda, b, ldb, c, ldc, split);
}

Status BFloat16Gemm(OpKernelContext* context, const GemmDims& d, const bfloat16* a, int64_t lda,
                    const bfloat16* b, int64_t ldb, float* c, int64_t ldc, bool split) {
  return AnyGemm(context, d, a, lda, b, ldb, c, ldc, split);
}

Status BFloat16GemmBiasActivation(OpKernelContext* context, const GemmDims& d, const bfloat16* a,
                                  int64_t lda, const bfloat16* b, int64_t ldb, const float* bias,
                                  FusedActivation activation, float* c) {
  return AnyGemm(context, d, a, lda, b, ldb, c, /*ldc=*/d.n, /*split=*/true,
                 Epilogue{.bias = bias, .activation = activation});
}

}  // namespace weft::kernels
