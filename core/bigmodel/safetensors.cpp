#include "core/bigmodel/safetensors.h"

#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::bigmodel {

namespace {

using nlohmann::json;

tl::unexpected<Error> invalid(const std::string &path, const std::string &message)
{
    return makeError(ErrorCode::InvalidInput, message, path);
}

std::string quote(const std::string &name)
{
    return "\"" + name + "\"";
}

bool isValidUtf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const unsigned char c = s[i];
        size_t extra = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            extra = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            extra = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + extra >= n)
            return false;
        for (size_t k = 1; k <= extra; ++k) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
            (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += extra + 1;
    }
    return true;
}

std::string shapeText(const std::vector<int64_t> &shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

Result<TensorInfo> parseEntry(const std::string &name, const json &entry, const std::string &path)
{
    const std::string who = "tensor " + quote(name) + ": ";
    if (!entry.is_object())
        return invalid(path, who + "entry is not an object");
    TensorInfo tensor;
    tensor.name = name;
    const auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string())
        return invalid(path, who + "missing \"dtype\" string");
    auto code = parseDTypeCode(dtype->get<std::string>());
    if (!code)
        return invalid(path, who + code.error().message);
    tensor.dtype = *code;
    const auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array())
        return invalid(path, who + "missing \"shape\" list");
    for (const json &d : *shape) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            return invalid(path,
                           who + "\"shape\" must hold non-negative integers, got " + jsonutil::jsonExcerpt(*shape));
        tensor.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    const auto offsets = entry.find("data_offsets");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned()) {
        const std::string got = offsets == entry.end() ? "nothing" : jsonutil::jsonExcerpt(*offsets);
        return invalid(path, who + "\"data_offsets\" must be two non-negative integers [begin, end], got " + got);
    }
    tensor.begin = (*offsets)[0].get<uint64_t>();
    tensor.end = (*offsets)[1].get<uint64_t>();
    if (tensor.end < tensor.begin)
        return invalid(path, who + "data_offsets end " + std::to_string(tensor.end) + " is before begin " +
                                 std::to_string(tensor.begin));
    uint64_t elements = 1;
    for (int64_t d : tensor.shape) {
        const uint64_t u = static_cast<uint64_t>(d);
        if (u != 0 && elements > UINT64_MAX / u)
            return invalid(path, who + "shape " + shapeText(tensor.shape) + " overflows a 64-bit element count");
        elements *= u;
    }
    const uint64_t bits = static_cast<uint64_t>(dtypeBits(tensor.dtype));
    if (elements != 0 && elements > UINT64_MAX / bits)
        return invalid(path, who + "shape " + shapeText(tensor.shape) + " overflows a 64-bit byte count");
    if ((elements * bits) % 8 != 0)
        return invalid(path, who + std::to_string(elements) + " elements of " + dtypeCode(tensor.dtype) +
                                 " are not a whole number of bytes (misaligned slice)");
    const uint64_t expected = elements * bits / 8;
    if (tensor.byteSize() != expected)
        return invalid(path, who + "data_offsets span " + std::to_string(tensor.byteSize()) + " bytes but shape " +
                                 shapeText(tensor.shape) + " of " + dtypeCode(tensor.dtype) + " needs " +
                                 std::to_string(expected));
    return tensor;
}

} // namespace

uint64_t TensorInfo::elementCount() const
{
    uint64_t n = 1;
    for (int64_t d : shape)
        n *= static_cast<uint64_t>(d);
    return n;
}

Result<SafetensorsHeader> parseSafetensors(const std::byte *bytes, uint64_t available, uint64_t fileSize,
                                           const std::string &path)
{
    if (fileSize < 8)
        return invalid(path, "header too small: the file has " + std::to_string(fileSize) +
                                 " bytes, a safetensors file starts with an 8-byte header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<uint8_t>(bytes[i]);
    if (n > kMaxSafetensorsHeaderSize)
        return invalid(path, "header too large: " + std::to_string(n) + " bytes (limit " +
                                 std::to_string(kMaxSafetensorsHeaderSize) + ")");
    if (n > fileSize - 8)
        return invalid(path, "invalid header length: " + std::to_string(n) + " bytes declared but only " +
                                 std::to_string(fileSize - 8) + " follow the length field");
    if (available < 8 + n)
        return makeError(ErrorCode::Internal, "header not fully read", path);
    const auto *text = reinterpret_cast<const unsigned char *>(bytes + 8);
    if (n == 0 || text[0] != '{')
        return invalid(path, "header does not start with '{'");
    if (!isValidUtf8(text, n))
        return invalid(path, "header is not valid UTF-8");
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxSafetensorsHeaderSize;
    limits.rejectDuplicateKeys = true;
    limits.subject = "header";
    auto parsed = jsonutil::parseJson(std::string_view(reinterpret_cast<const char *>(text), n), path, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const json &root = *parsed;
    if (!root.is_object())
        return invalid(path, "header is not a JSON object");

    SafetensorsHeader header;
    header.headerSize = n;
    header.dataStart = 8 + n;
    header.dataSize = fileSize - 8 - n;
    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (!it->is_object())
                return invalid(path, "__metadata__ is not an object of strings");
            header.hasMetadata = true;
            for (auto m = it->begin(); m != it->end(); ++m) {
                if (!m->is_string())
                    return invalid(path, "__metadata__ value of " + quote(m.key()) +
                                             " is not a string: " + jsonutil::jsonExcerpt(*m));
                header.metadata[m.key()] = m->get<std::string>();
            }
            continue;
        }
        auto tensor = parseEntry(it.key(), *it, path);
        if (!tensor)
            return tl::unexpected(tensor.error());
        header.tensors.push_back(std::move(*tensor));
    }
    std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorInfo &a, const TensorInfo &b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t position = 0;
    const TensorInfo *previous = nullptr;
    for (const TensorInfo &t : header.tensors) {
        if (t.begin != position) {
            const std::string who = "tensor " + quote(t.name) + ": data begins at " + std::to_string(t.begin);
            if (!previous)
                return invalid(path, who + " but the first tensor must begin at 0 (gap)");
            if (t.begin > position)
                return invalid(path, who + " but the previous tensor " + quote(previous->name) + " ends at " +
                                         std::to_string(position) + " (gap)");
            return invalid(path, who + ", inside the previous tensor " + quote(previous->name) + " which ends at " +
                                     std::to_string(position) + " (overlap)");
        }
        if (t.end > header.dataSize)
            return invalid(path, "tensor " + quote(t.name) + ": data ends at " + std::to_string(t.end) +
                                     " beyond the data buffer of " + std::to_string(header.dataSize) +
                                     " bytes (truncated file?)");
        position = t.end;
        previous = &t;
    }
    if (position != header.dataSize)
        return invalid(path, "the data buffer has " + std::to_string(header.dataSize) +
                                 " bytes but the tensors end at " + std::to_string(position) + " (trailing bytes)");
    if (available >= fileSize) {
        for (TensorInfo &t : header.tensors)
            t.data = bytes + header.dataStart + t.begin;
    }
    return header;
}

Result<SafetensorsHeader> readSafetensorsHeader(const std::string &path)
{
    auto opened = fileutil::openRegularFile(path);
    if (!opened)
        return tl::unexpected(opened.error());
    const int fd = *opened;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int saved = errno;
        ::close(fd);
        return makeError(ErrorCode::Io, std::string("cannot stat: ") + std::strerror(saved), path);
    }
    const uint64_t fileSize = static_cast<uint64_t>(st.st_size);
    std::vector<std::byte> buffer(8);
    uint64_t want = std::min<uint64_t>(8, fileSize);
    if (::pread(fd, buffer.data(), want, 0) != static_cast<ssize_t>(want)) {
        ::close(fd);
        return makeError(ErrorCode::Io, "cannot read the header length", path);
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<uint8_t>(buffer[i]);
    if (fileSize >= 8 && n <= kMaxSafetensorsHeaderSize && n <= fileSize - 8) {
        buffer.resize(8 + n);
        if (::pread(fd, buffer.data() + 8, n, 8) != static_cast<ssize_t>(n)) {
            ::close(fd);
            return makeError(ErrorCode::Io, "cannot read the header", path);
        }
    }
    ::close(fd);
    return parseSafetensors(buffer.data(), buffer.size(), fileSize, path);
}

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::open(const std::string &path)
{
    auto mapping = MappedFile::open(path);
    if (!mapping)
        return tl::unexpected(mapping.error());
    auto header = parseSafetensors((*mapping)->data(), (*mapping)->size(), (*mapping)->size(), path);
    if (!header)
        return tl::unexpected(header.error());
    auto file = std::make_shared<SafetensorsFile>();
    file->m_path = (*mapping)->path();
    file->m_mapping = std::move(*mapping);
    file->m_header = std::move(*header);
    for (size_t i = 0; i < file->m_header.tensors.size(); ++i)
        file->m_index.emplace(file->m_header.tensors[i].name, i);
    return std::shared_ptr<const SafetensorsFile>(std::move(file));
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::fromHeader(std::string path, SafetensorsHeader header)
{
    auto file = std::make_shared<SafetensorsFile>();
    file->m_path = std::move(path);
    file->m_header = std::move(header);
    for (auto &tensor : file->m_header.tensors)
        tensor.data = nullptr;
    for (size_t i = 0; i < file->m_header.tensors.size(); ++i)
        file->m_index.emplace(file->m_header.tensors[i].name, i);
    return file;
}

const TensorInfo *SafetensorsFile::find(const std::string &name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_header.tensors[it->second];
}

} // namespace accel::bigmodel
