// Leaf layers with Hugging Face parameter names and layouts: Linear (weight [out, in]), GPT-2's
// Conv1D (weight stored transposed, [in, out]), LayerNorm, RMSNorm (computed in float32 like
// Transformers), Embedding. Each forward opens a ForwardScope and moves its input to the
// module's execution device. Linear and Conv1D take a LoRA branch (peft's layout: children
// lora_A and lora_B). Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/common/result.h"
#include "core/inference/decodeattention.h"
#include "core/inference/module.h"
#include "core/inference/tensorparallel.h"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace accel::inference {

// A module whose forward runs on one device (set by the dispatcher; CPU by default).
class DeviceModule : public Module {
public:
    using Module::Module;
    const at::Device &executionDevice() const { return m_device; }
    void setExecutionDevice(const at::Device &device, bool recursive);

protected:
    at::Tensor toDevice(const at::Tensor &x) const { return x.device() == m_device ? x : x.to(m_device); }

private:
    at::Device m_device{at::kCPU};
};

// A named grouping of children (Transformers' "transformer", "h", "mlp" levels).
class Container : public DeviceModule {
public:
    explicit Container(std::string typeName) : DeviceModule(std::move(typeName)) {}
    template <typename M>
    M *add(const std::string &localName, std::unique_ptr<M> child)
    {
        return addChild(localName, std::move(child));
    }
};

class Linear;
class QuantizedWeight;

// LoRA on a layer (peft's LoraLayer): out += scaling * lora_B(lora_A(dropout(x))), lora_A [r, in]
// and lora_B [out, r] being children of the adapted layer ("q_proj.lora_A.weight").
struct LoraSettings {
    int64_t rank = 8;
    double scaling = 2.0; // lora_alpha / r (lora_alpha / sqrt(r) with rsLoRA)
    double dropout = 0.0;
};

class LoraAdaptable : public DeviceModule {
public:
    using DeviceModule::DeviceModule;
    virtual int64_t inFeatures() const = 0;
    virtual int64_t outFeatures() const = 0;
    // The base weight as Hugging Face stores it and whether it is [in, out] (Conv1D) rather than
    // [out, in]: merging adds scaling * B @ A (transposed for [in, out]).
    virtual Parameter *baseWeight() const = 0;
    virtual bool weightIsTransposed() const { return false; }
    // Adds lora_A and lora_B (their values undefined until loaded or initialised).
    void attachLora(const LoraSettings &settings);
    bool hasLora() const { return m_loraA != nullptr; }
    Linear *loraA() const { return m_loraA; }
    Linear *loraB() const { return m_loraB; }
    const LoraSettings &loraSettings() const { return m_lora; }
    // The base weight held quantized ([out, in], quantization.h): forward multiplies by it instead.
    void setQuantized(std::shared_ptr<const QuantizedWeight> weight) { m_quantized = std::move(weight); }
    const QuantizedWeight *quantized() const { return m_quantized.get(); }

protected:
    // `out` plus the LoRA branch of `x` (x on the execution device).
    at::Tensor withLora(const at::Tensor &x, const at::Tensor &out);
    // x times the quantized weight, plus `bias` when defined, plus the LoRA branch.
    at::Tensor quantizedForward(const at::Tensor &x, const at::Tensor &bias);
    std::shared_ptr<const QuantizedWeight> m_quantized;

private:
    Linear *m_loraA = nullptr, *m_loraB = nullptr;
    LoraSettings m_lora;
};

// A pre-quantized checkpoint's layer holds the tensors its format stores (loaded in their own dtype)
// and builds the QuantizedWeight from them once loaded; an offloaded layer builds it for each
// forward and drops it after.
class Linear : public LoraAdaptable {
public:
    Linear(int64_t in, int64_t out, bool bias);
    at::Tensor forward(const at::Tensor &x);
    int64_t inFeatures() const override { return m_in; }
    int64_t outFeatures() const override { return m_out; }
    Parameter *baseWeight() const override { return m_weight; } // null when stored quantized
    Parameter *bias() const { return m_bias; }

    using QuantizedBuilder = std::function<Result<QuantizedWeight>(const std::map<std::string, at::Tensor> &)>;
    // Replaces `weight` by these tensors (local names, shapes as stored).
    void storeQuantized(const std::vector<std::pair<std::string, std::vector<int64_t>>> &tensors,
                        QuantizedBuilder builder);
    bool storedQuantized() const { return static_cast<bool>(m_builder); }
    Result<void> buildQuantized(); // from the loaded tensors

    // Tensor parallelism (tensorparallel.h): keeps this rank's part of the loaded weight (and of the
    // bias when column-wise); gatherTensorParallel() makes it whole again on every rank (a collective).
    void splitForTensorParallel(TensorParallelStyle style, TensorParallel group);
    void gatherTensorParallel();

private:
    Parameter *m_weight;
    Parameter *m_bias = nullptr;
    int64_t m_in, m_out;
    TensorParallel m_tensorParallel; // set while split
    TensorParallelStyle m_style = TensorParallelStyle::Column;
    QuantizedBuilder m_builder;
    std::vector<Parameter *> m_stored;
};

class Conv1D : public LoraAdaptable {
public:
    Conv1D(int64_t in, int64_t out);
    at::Tensor forward(const at::Tensor &x);
    int64_t inFeatures() const override { return m_weight->shape[0]; }
    int64_t outFeatures() const override { return m_out; }
    Parameter *baseWeight() const override { return m_weight; }
    bool weightIsTransposed() const override { return true; }

private:
    Parameter *m_weight;
    Parameter *m_bias;
    int64_t m_out;
};

class LayerNorm : public DeviceModule {
public:
    LayerNorm(int64_t size, double eps);
    at::Tensor forward(const at::Tensor &x);

private:
    Parameter *m_weight;
    Parameter *m_bias;
    double m_eps;
};

// Llama's RMSNorm: weight * normalised x in x's dtype. With plusOne, Gemma's: normalised x times
// (1 + weight), all in float32, then x's dtype.
class RMSNorm : public DeviceModule {
public:
    RMSNorm(int64_t size, double eps, bool plusOne = false, std::string typeName = "RMSNorm");
    at::Tensor forward(const at::Tensor &x);
    // Sequence parallel (tensorparallel.h): the weight's gradient summed over `group` (null: not).
    void sumGradientOver(TensorParallel group) { m_gradientGroup = std::move(group); }

private:
    Parameter *m_weight;
    double m_eps;
    bool m_plusOne;
    TensorParallel m_gradientGroup;
};

class Embedding : public DeviceModule {
public:
    Embedding(int64_t count, int64_t size);
    at::Tensor forward(const at::Tensor &ids);
    // Logits against the embedding matrix (a tied output head): this rank's vocabulary columns when split.
    at::Tensor project(const at::Tensor &hidden);
    // Vocabulary parallel (tensorparallel.h): keeps this rank's rows (vocab / size, which divides);
    // forward then sums the rows' lookups over the group (leaveTensorParallel). gather makes the
    // weight whole again on every rank (a collective).
    void splitForTensorParallel(TensorParallel group);
    void gatherTensorParallel();

private:
    Parameter *m_weight;
    TensorParallel m_tensorParallel; // set while split
};

// The most rows of x a float32 Linear or Conv1D on the CPU ever takes our kernels (floatgemv.h,
// gemvcolumns.h) for rather than libtorch's GEMM: a decode step's one row, the rows a draft model's
// tokens are verified in, and prompts (or prefill chunks) of up to this many tokens; how many of them
// on this CPU is measured at load (promptkernel.h, ourKernelMostRows). libtorch's GEMM (MKL's sgemm)
// packs the weight's panels first; ours reads each weight once from memory. Measured on the AVX2
// EPYC, the 1.1B Llama's 154 block weights from its file mapping, 2 threads, a prompt's products:
// libtorch's at::linear 1443 ms at 4 rows, 1515 at 16, 2587 at 64, 3596 at 128; ours 242, 624, 2138
// and 4232 ms (docs/quantization.md, "Prompts through the decode kernel"). Bfloat16
// prompts, Linear and Conv1D, take ours at any length where libtorch's bfloat16 GEMM has no
// instructions of its own (kernelisa.h's bf16GemmHere), since that GEMM then widens every value in
// software.
inline constexpr int64_t kOurKernelMostRows = 64;
// Where libtorch's bfloat16 GEMM has no instructions of its own (bf16GemmHere), the most bfloat16
// rows of x a GPT-2 Conv1D takes our column kernel for, one row after another (each reads the whole
// weight); longer products go through libtorch's float32 GEMM over the weight widened to float32 a
// block at a time. On the AVX2 EPYC, GPT-2 small's bfloat16 prompt took, to the first token, row
// by row and widened: 83 and 107 ms at 8 tokens, 118-126 and 103-117 at 16, 167 and 125 at 24, 433
// and 173 at 64, 2830 and 1185 at 512 (docs/quantization.md, "Bfloat16 prompts beyond 16 rows, and their
// attention").
// A Linear's bfloat16 rows stay ours at any length there: bf16gemv.h reads the weight once for
// several rows, and on the 1.1B Llama it was ahead of the widened GEMM up to 512 tokens.
inline constexpr int64_t kOurBf16ColumnKernelMostRows = 16;
// Whether a Conv1D's product of `rows` bfloat16 rows on the CPU without autograd goes through
// widenedBf16Columns: more than kOurBf16ColumnKernelMostRows rows where libtorch's bfloat16 GEMM has
// no instructions of its own (bf16GemmHere).
bool bf16ColumnsWidened(int64_t rows);
// Bfloat16 rows [rows, in] times a bfloat16 weight [in, out] plus a bfloat16 bias [out], returned in
// bfloat16: libtorch's float32 GEMM (MKL's sgemm) over the weight widened to float32 (exact) a block
// of columns at a time, each output's float32 sum rounded once to bfloat16.
at::Tensor widenedBf16Columns(const at::Tensor &rows, const at::Tensor &weight, const at::Tensor &bias);

// x [..., in] times weight [out, in] transposed (+ bias [out]): at::linear, except on the CPU
// without autograd for float32 x of up to ourKernelMostRows() rows, and bfloat16 x of one row (a
// decode step) or, where libtorch's bfloat16 GEMM has no instructions of its own (kernelisa.h's
// bf16GemmHere), of any number of rows, which go through floatgemv.h's or bf16gemv.h's kernel.
at::Tensor linearRows(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias);

// gelu_new/gelu_pytorch_tanh/gelu_fast (tanh approximation), gelu (erf), relu, silu/swish.
at::Tensor activate(const at::Tensor &x, const std::string &activation);

// Causal attention of q [B, H, T, D] over k, v [B, KV, S, D] (H a multiple of KV, grouped-query
// heads h using key/value head h / (H / KV)); the T queries are the last T of the S positions.
// Scores times `scale` (0: 1/sqrt(D)), soft-capped as softcap * tanh(score / softcap) when softcap
// > 0, then masked: a query sees the positions up to its own and, with a window, only the window -
// 1 positions before it. Softmax in float32; `dropout` > 0 drops attention probabilities
// (training). Returns [B, H, T, D].
struct AttentionOptions {
    double scale = 0.0;
    double softcap = 0.0;
    int64_t window = 0;
    double dropout = 0.0;
};
at::Tensor causalAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                           const AttentionOptions &options);
// The scores' factor for heads of `dim`: options.scale, or 1/sqrt(dim) when it is 0.
double attentionScale(const AttentionOptions &options, int64_t dim);
at::Tensor causalAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double dropout = 0.0);
// decodeattention.h's shape and strides of one query per sequence q [B, H, 1, D] over k, v
// [B, KV, S, D] (each row's elements contiguous), which causalAttention's decode steps take.
DecodeAttentionShape decodeAttentionShape(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double scale,
                                          double softcap);

// Dropout with probability p while `module` trains (Transformers' nn.Dropout), else x.
at::Tensor dropoutIn(const torch::nn::Module &module, const at::Tensor &x, double p);

// Sets the execution device of every DeviceModule in the tree.
void setExecutionDevices(Module &root, const at::Device &device);

} // namespace accel::inference
