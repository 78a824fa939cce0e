// Fuzz target: a whole safetensors file (length, JSON header, data). Accepted files must keep the
// layout invariants the loader relies on: tensors contiguous from 0 to the end of the data buffer,
// each sized by its shape and dtype, data pointers inside the input.
#include "core/bigmodel/safetensors.h"

#include <cstdint>
#include <cstdlib>

using namespace accel::bigmodel;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const auto *bytes = reinterpret_cast<const std::byte *>(data);
    auto header = parseSafetensors(bytes, size, size, "fuzz.safetensors");
    if (!header) {
        if (header.error().message.empty() || header.error().context != "fuzz.safetensors")
            std::abort(); // every refusal names the file and says why
        return 0;
    }
    if (header->dataStart + header->dataSize != size)
        std::abort();
    uint64_t position = 0;
    for (const TensorInfo &t : header->tensors) {
        if (t.begin != position || t.end < t.begin || t.end > header->dataSize)
            std::abort();
        if (t.data != bytes + header->dataStart + t.begin)
            std::abort();
        const uint64_t bits = t.elementCount() * static_cast<uint64_t>(dtypeBits(t.dtype));
        if (bits / 8 != t.byteSize())
            std::abort();
        position = t.end;
    }
    if (position != header->dataSize)
        std::abort();
    return 0;
}
