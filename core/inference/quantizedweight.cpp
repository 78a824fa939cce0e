#include "core/inference/quantizedweight.h"

#include "core/inference/int8gemv.h"
#include "core/inference/intraopteam.h"
#include "core/inference/quantkernels.h"

#include <cstring>

namespace accel::inference {

namespace {

constexpr int64_t kKernelRows = 64; // up to this many rows go through the kernels (4 rows a pass over W)
constexpr int64_t kTileRows = 256;  // weight rows dequantized at once for libtorch's GEMM

at::Tensor floats(at::Tensor t)
{
    return t.to(at::kFloat).contiguous();
}

} // namespace

Result<QuantizedWeight> QuantizedWeight::fromInt8(at::Tensor cb, at::Tensor scb, const std::string &what)
{
    if (cb.scalar_type() != at::kChar || cb.dim() != 2)
        return makeError(ErrorCode::InvalidInput, what + ": an int8 weight [out, in] is expected");
    if (scb.numel() != cb.size(0))
        return makeError(ErrorCode::InvalidInput, what + ": SCB holds " + std::to_string(scb.numel()) + " values for " +
                                                      std::to_string(cb.size(0)) + " rows");
    QuantizedWeight w;
    w.m_format = Format::Int8Rows;
    w.m_name = "int8";
    w.m_out = cb.size(0);
    w.m_in = cb.size(1);
    w.m_cb = cb.contiguous();
    w.m_scb = floats(scb).view({-1});
    w.m_rowScale = w.m_scb * (1.0f / 127.0f);
    w.m_rowScaleBf16 = w.m_rowScale.to(at::kBFloat16);
    return w;
}

Result<QuantizedWeight> QuantizedWeight::fromFourBit(at::Tensor packed, at::Tensor absmax, at::Tensor code,
                                                     int64_t blocksize, int64_t out, int64_t in,
                                                     const std::string &name, const std::string &what)
{
    const int64_t elements = out * in;
    if (packed.scalar_type() != at::kByte || packed.numel() != bigmodel::bnb::packedBytes(elements))
        return makeError(ErrorCode::InvalidInput, what + ": " + std::to_string(bigmodel::bnb::packedBytes(elements)) +
                                                      " packed uint8 bytes are expected for a [" + std::to_string(out) +
                                                      ", " + std::to_string(in) + "] weight");
    if (blocksize <= 0 || absmax.numel() != bigmodel::bnb::blockCount(elements, blocksize))
        return makeError(ErrorCode::InvalidInput, what + ": absmax holds " + std::to_string(absmax.numel()) +
                                                      " values for blocks of " + std::to_string(blocksize));
    if (code.numel() != 16)
        return makeError(ErrorCode::InvalidInput, what + ": the 4-bit code holds 16 values");
    QuantizedWeight w;
    w.m_format = Format::FourBitCode;
    w.m_name = name;
    w.m_out = out;
    w.m_in = in;
    w.m_blocksize = blocksize;
    w.m_packed = packed.contiguous().view({-1});
    w.m_absmax = floats(absmax).view({-1});
    w.m_code = floats(code).view({-1});
    return w;
}

QuantizedWeight QuantizedWeight::fromGroups(const at::Tensor &q, at::Tensor scales, at::Tensor zeros, int64_t groupSize,
                                            at::Tensor inputOrder, const std::string &name)
{
    QuantizedWeight w;
    w.m_format = Format::FourBitGroups;
    w.m_name = name;
    w.m_out = q.size(0);
    w.m_in = q.size(1);
    w.m_blocksize = groupSize;
    // Two indices per byte, the first in the high nibble (the 4-bit code's layout).
    auto pairs = q.contiguous().view({-1, 2}).to(at::kByte);
    w.m_packed = (pairs.select(1, 0) * 16 + pairs.select(1, 1)).to(at::kByte).contiguous();
    w.m_scales = floats(scales);
    w.m_zeros = floats(zeros);
    w.m_inputOrder = inputOrder;
    return w;
}

QuantizedWeight QuantizedWeight::quantizeInt8(const at::Tensor &weight)
{
    // bitsandbytes' Int8Params quantizes the weight cast to float16 (its rows, absmax and all).
    const auto source = floats(weight.to(at::kHalf));
    const int64_t out = source.size(0), in = source.size(1);
    auto cb = at::empty({out, in}, at::TensorOptions().dtype(at::kChar));
    auto scb = at::empty({out}, at::TensorOptions().dtype(at::kFloat));
    parallelPieces(out, 1, 16, [&](int64_t begin, int64_t end) {
        bigmodel::bnb::quantizeInt8Rows(source.data_ptr<float>() + begin * in, end - begin, in,
                                        cb.data_ptr<int8_t>() + begin * in, scb.data_ptr<float>() + begin);
    });
    return *fromInt8(cb, scb, "quantize");
}

QuantizedWeight QuantizedWeight::quantizeFourBit(const at::Tensor &weight, bigmodel::bnb::FourBit type,
                                                 int64_t blocksize)
{
    const auto source = floats(weight);
    const int64_t out = source.size(0), in = source.size(1), elements = out * in;
    auto packed = at::empty({bigmodel::bnb::packedBytes(elements)}, at::TensorOptions().dtype(at::kByte));
    auto absmax = at::empty({bigmodel::bnb::blockCount(elements, blocksize)}, at::TensorOptions().dtype(at::kFloat));
    const auto &table = bigmodel::bnb::fourBitCode(type);
    auto code = at::empty({16}, at::TensorOptions().dtype(at::kFloat));
    std::memcpy(code.data_ptr<float>(), table.data(), sizeof(float) * 16);
    // Blocks of an even number of elements are independent: quantized in parallel, 64 blocks a task.
    const int64_t blocks = absmax.numel();
    if (blocksize % 2 == 0) {
        parallelPieces(blocks, 1, 64, [&](int64_t begin, int64_t end) {
            const int64_t first = begin * blocksize, last = std::min(elements, end * blocksize);
            bigmodel::bnb::quantize4bit(source.data_ptr<float>() + first, last - first, blocksize, type,
                                        packed.data_ptr<uint8_t>() + first / 2, absmax.data_ptr<float>() + begin);
        });
    } else {
        bigmodel::bnb::quantize4bit(source.data_ptr<float>(), elements, blocksize, type, packed.data_ptr<uint8_t>(),
                                    absmax.data_ptr<float>());
    }
    return *fromFourBit(packed, absmax, code, blocksize, out, in, bigmodel::bnb::fourBitName(type), "quantize");
}

qk::FourBitWeight QuantizedWeight::fourBitView() const
{
    qk::FourBitWeight w;
    w.packed = m_packed.data_ptr<uint8_t>();
    w.n = m_out;
    w.k = m_in;
    w.blocksize = m_blocksize;
    if (m_format == Format::FourBitCode) {
        w.code = m_code.data_ptr<float>();
        w.absmax = m_absmax.data_ptr<float>();
    } else {
        w.scales = m_scales.data_ptr<float>();
        w.zeros = m_zeros.data_ptr<float>();
    }
    return w;
}

at::Tensor QuantizedWeight::rowsAsFloat(int64_t begin, int64_t end) const
{
    auto out = at::empty({end - begin, m_in}, at::TensorOptions().dtype(at::kFloat));
    if (m_format == Format::Int8Rows) {
        qk::dequantizeInt8Rows(m_cb.data_ptr<int8_t>(), m_rowScale.data_ptr<float>(), m_in, begin, end,
                               out.data_ptr<float>());
        return out;
    }
    qk::dequantizeFourBitRows(fourBitView(), begin, end, out.data_ptr<float>());
    return out;
}

namespace {

const char *activationName(at::ScalarType type)
{
    return type == at::kBFloat16 ? "bfloat16" : type == at::kHalf ? "float16" : "float32";
}

} // namespace

at::Tensor QuantizedWeight::decodeProduct(const at::Tensor &x, Int8Kernel kernel) const
{
    const int64_t rows = x.size(0);
    if (kernel == Int8Kernel::Libtorch) {
        const at::Tensor scale = x.scalar_type() == at::kBFloat16 ? m_rowScaleBf16 : m_rowScale.to(x.scalar_type());
        return at::_weight_int8pack_mm(x.contiguous(), m_cb, scale);
    }
    const at::Tensor input = floats(x);
    auto out = at::empty({rows, m_out}, at::TensorOptions().dtype(at::kFloat));
    int8::gemv(hostKernelIsa(), input.data_ptr<float>(), rows, m_in, m_cb.data_ptr<int8_t>(),
               m_rowScale.data_ptr<float>(), m_out, out.data_ptr<float>());
    return out.to(x.scalar_type());
}

at::Tensor QuantizedWeight::matmul(const at::Tensor &x) const
{
    auto sizes = x.sizes().vec();
    sizes.back() = m_out;
    auto flat = x.reshape({-1, m_in});
    const int64_t rows = flat.size(0);
    if (m_format == Format::Int8Rows) {
        // Decode: the kernel chosen at load (int8kernel.h).
        if (rows <= kDecodeRows)
            return decodeProduct(flat, int8KernelFor(activationName(flat.scalar_type()))).view(sizes);
        // libtorch's int8 weight-only kernel for longer bfloat16 inputs.
        if (flat.scalar_type() == at::kBFloat16)
            return at::_weight_int8pack_mm(flat.contiguous(), m_cb, m_rowScaleBf16).view(sizes);
    }
    auto input = floats(flat);
    if (m_inputOrder.defined())
        input = input.index_select(1, m_inputOrder);
    at::Tensor out;
    if (rows <= kKernelRows) {
        out = at::empty({rows, m_out}, at::TensorOptions().dtype(at::kFloat));
        if (m_format == Format::Int8Rows) {
            int8::gemv(hostKernelIsa(), input.data_ptr<float>(), rows, m_in, m_cb.data_ptr<int8_t>(),
                       m_rowScale.data_ptr<float>(), m_out, out.data_ptr<float>());
        } else {
            qk::fourBit(input.data_ptr<float>(), rows, fourBitView(), out.data_ptr<float>());
        }
    } else {
        out = at::empty({rows, m_out}, at::TensorOptions().dtype(at::kFloat));
        for (int64_t begin = 0; begin < m_out; begin += kTileRows) {
            const int64_t end = std::min(m_out, begin + kTileRows);
            out.narrow(1, begin, end - begin).copy_(at::mm(input, rowsAsFloat(begin, end).t()));
        }
    }
    return out.to(x.scalar_type()).view(sizes);
}

at::Tensor QuantizedWeight::dequantize() const
{
    auto out = at::empty({m_out, m_in}, at::TensorOptions().dtype(at::kFloat));
    if (m_format == Format::Int8Rows) {
        bigmodel::bnb::dequantizeInt8Rows(m_cb.data_ptr<int8_t>(), m_scb.data_ptr<float>(), m_out, m_in,
                                          out.data_ptr<float>());
    } else if (m_format == Format::FourBitCode) {
        // bitsandbytes' dequantize_4bit: code[index] * absmax[block], one float32 product.
        const float *code = m_code.data_ptr<float>();
        const uint8_t *packed = m_packed.data_ptr<uint8_t>();
        const float *absmax = m_absmax.data_ptr<float>();
        float *o = out.data_ptr<float>();
        for (int64_t e = 0; e < m_out * m_in; ++e) {
            const uint8_t byte = packed[e / 2];
            volatile float value = code[e % 2 == 0 ? byte >> 4 : byte & 0x0F] * absmax[e / m_blocksize];
            o[e] = value;
        }
    } else {
        out = rowsAsFloat(0, m_out);
        if (m_inputOrder.defined())
            out = at::empty_like(out).index_copy_(1, m_inputOrder, out);
    }
    return out;
}

uint64_t QuantizedWeight::bytes() const
{
    uint64_t total = 0;
    for (const at::Tensor *t : {&m_cb, &m_scb, &m_packed, &m_absmax, &m_code, &m_scales, &m_zeros, &m_inputOrder})
        if (t->defined())
            total += t->nbytes();
    return total;
}

} // namespace accel::inference
