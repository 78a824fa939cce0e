#include "core/bigmodel/dtype.h"

#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace accel::bigmodel {

namespace {

struct DTypeInfo {
    DType dtype;
    const char *code;
    int bits;
    bool floating;
    int writerRank; // position in the reference enum; the writer sorts descending
    const char *torch;
};

// writerRank follows the reference implementation's enum order (BOOL lowest, U64 highest).
constexpr DTypeInfo kTypes[] = {
    {DType::Bool, "BOOL", 8, false, 0, "bool"},
    {DType::F4, "F4", 4, true, 1, "float4_e2m1fn_x2"},
    {DType::F6_E2M3, "F6_E2M3", 6, true, 2, "float6_e2m3fn"},
    {DType::F6_E3M2, "F6_E3M2", 6, true, 3, "float6_e3m2fn"},
    {DType::U8, "U8", 8, false, 4, "uint8"},
    {DType::I8, "I8", 8, false, 5, "int8"},
    {DType::F8_E5M2, "F8_E5M2", 8, true, 6, "float8_e5m2"},
    {DType::F8_E4M3, "F8_E4M3", 8, true, 7, "float8_e4m3fn"},
    {DType::F8_E8M0, "F8_E8M0", 8, true, 8, "float8_e8m0fnu"},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8, true, 9, "float8_e4m3fnuz"},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8, true, 10, "float8_e5m2fnuz"},
    {DType::I16, "I16", 16, false, 11, "int16"},
    {DType::U16, "U16", 16, false, 12, "uint16"},
    {DType::F16, "F16", 16, true, 13, "float16"},
    {DType::BF16, "BF16", 16, true, 14, "bfloat16"},
    {DType::I32, "I32", 32, false, 15, "int32"},
    {DType::U32, "U32", 32, false, 16, "uint32"},
    {DType::F32, "F32", 32, true, 17, "float32"},
    {DType::C64, "C64", 64, true, 18, "complex64"},
    {DType::F64, "F64", 64, true, 19, "float64"},
    {DType::I64, "I64", 64, false, 20, "int64"},
    {DType::U64, "U64", 64, false, 21, "uint64"},
};

const DTypeInfo &info(DType dtype)
{
    for (const DTypeInfo &i : kTypes) {
        if (i.dtype == dtype)
            return i;
    }
    return kTypes[0];
}

using text::lower;

} // namespace

const char *dtypeCode(DType dtype)
{
    return info(dtype).code;
}
int dtypeBits(DType dtype)
{
    return info(dtype).bits;
}
bool dtypeIsFloating(DType dtype)
{
    return info(dtype).floating;
}
int dtypeWriterRank(DType dtype)
{
    return info(dtype).writerRank;
}
std::string torchName(DType dtype)
{
    return info(dtype).torch;
}

Result<DType> parseDTypeCode(const std::string &code)
{
    for (const DTypeInfo &i : kTypes) {
        if (code == i.code)
            return i.dtype;
    }
    std::string valid;
    for (const std::string &c : allDTypeCodes())
        valid += (valid.empty() ? "" : ", ") + c;
    return makeError(ErrorCode::InvalidInput, "unknown dtype \"" + code + "\" (valid: " + valid + ")");
}

std::vector<std::string> allDTypeCodes()
{
    std::vector<const DTypeInfo *> sorted;
    for (const DTypeInfo &i : kTypes)
        sorted.push_back(&i);
    std::sort(sorted.begin(), sorted.end(),
              [](const DTypeInfo *a, const DTypeInfo *b) { return a->writerRank > b->writerRank; });
    std::vector<std::string> codes;
    for (const DTypeInfo *i : sorted)
        codes.emplace_back(i->code);
    return codes;
}

Result<TargetDType> parseTargetDType(const std::string &given)
{
    std::string name = lower(given);
    if (name.rfind("torch.", 0) == 0)
        name = name.substr(6);
    struct Alias {
        const char *spelling;
        const char *canonical;
        double bytes;
        bool floating;
    };
    static const Alias aliases[] = {
        {"float32", "float32", 4, true},
        {"fp32", "float32", 4, true},
        {"float", "float32", 4, true},
        {"float16", "float16", 2, true},
        {"fp16", "float16", 2, true},
        {"half", "float16", 2, true},
        {"bfloat16", "bfloat16", 2, true},
        {"bf16", "bfloat16", 2, true},
        {"float64", "float64", 8, true},
        {"double", "float64", 8, true},
        {"fp8", "fp8", 1, true},
        {"float8", "fp8", 1, true},
        {"float8_e4m3fn", "float8_e4m3fn", 1, true},
        {"float8_e5m2", "float8_e5m2", 1, true},
        {"int8", "int8", 1, true},
        {"int4", "int4", 0.5, true},
        {"int2", "int2", 0.25, true},
    };
    for (const Alias &a : aliases) {
        if (name == a.spelling)
            return TargetDType{a.canonical, a.bytes, a.floating};
    }
    return makeError(ErrorCode::InvalidInput,
                     "unknown dtype \"" + given +
                         "\" (valid: float32, float16, bfloat16, float64, fp8, int8, int4, int2)");
}

bool byteSizeFor(uint64_t elements, DType dtype, uint64_t *bytes)
{
    const uint64_t bits = static_cast<uint64_t>(dtypeBits(dtype));
    if (elements != 0 && bits > UINT64_MAX / elements)
        return false;
    const uint64_t total = elements * bits;
    if (total % 8 != 0)
        return false;
    *bytes = total / 8;
    return true;
}

} // namespace accel::bigmodel
