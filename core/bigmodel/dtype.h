// Element types of safetensors checkpoints (facts 6.2) and their sizes, plus the torch dtype names
// that users type on the command line (--dtype bfloat16) and that offload folders record.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::bigmodel {

enum class DType {
    Bool,
    U8,
    I8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
    C64,
    F8_E4M3,
    F8_E5M2,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    F8_E8M0,
    F6_E2M3,
    F6_E3M2,
    F4,
};

// The safetensors code ("BF16"), its bit width per element (6 and 4 for the packed MX types).
const char *dtypeCode(DType dtype);
int dtypeBits(DType dtype);
bool dtypeIsFloating(DType dtype); // floating and complex types: the ones a target dtype casts
// Rank in the reference writer's order: higher ranks are written first.
int dtypeWriterRank(DType dtype);

Result<DType> parseDTypeCode(const std::string &code);
std::vector<std::string> allDTypeCodes();

// Torch-style names: "float32", "bfloat16", "float8_e4m3fn", "int8"... (with "torch." prefix
// accepted), and the user's short forms fp32/fp16/bf16/fp8/int4.
std::string torchName(DType dtype);

// A target dtype for size planning: a storage type, or one of the sub-byte quantised sizes that
// have no safetensors code of their own (int4 counts as half a byte, like Accelerate).
struct TargetDType {
    std::string name; // as the user wrote it, canonical: "float16", "int4"
    double bytesPerElement = 4;
    bool floating = true;
};
Result<TargetDType> parseTargetDType(const std::string &name);

// Bytes needed for `elements` of `dtype`; fails on overflow or when the bits are not a whole
// number of bytes.
bool byteSizeFor(uint64_t elements, DType dtype, uint64_t *bytes);

} // namespace accel::bigmodel
