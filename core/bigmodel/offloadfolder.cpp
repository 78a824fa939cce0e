#include "core/bigmodel/offloadfolder.h"

#include "core/bigmodel/safetensors.h"
#include "core/common/atomicfile.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace accel::bigmodel {

namespace fs = std::filesystem;

namespace {

struct NameMap {
    DType dtype;
    const char *name;
};

const NameMap kNames[] = {
    {DType::Bool, "bool"},
    {DType::U8, "uint8"},
    {DType::I8, "int8"},
    {DType::I16, "int16"},
    {DType::U16, "uint16"},
    {DType::I32, "int32"},
    {DType::U32, "uint32"},
    {DType::I64, "int64"},
    {DType::U64, "uint64"},
    {DType::F16, "float16"},
    {DType::BF16, "bfloat16"},
    {DType::F32, "float32"},
    {DType::F64, "float64"},
    {DType::C64, "complex64"},
    {DType::F8_E4M3, "float8_e4m3fn"},
    {DType::F8_E5M2, "float8_e5m2"},
    {DType::F8_E4M3FNUZ, "float8_e4m3fnuz"},
    {DType::F8_E5M2FNUZ, "float8_e5m2fnuz"},
    {DType::F8_E8M0, "float8_e8m0fnu"},
    {DType::F6_E2M3, "float6_e2m3fn"},
    {DType::F6_E3M2, "float6_e3m2fn"},
    {DType::F4, "float4_e2m1fn_x2"},
};

uint64_t elementsOf(const std::vector<int64_t> &shape)
{
    uint64_t n = 1;
    for (int64_t d : shape)
        n *= static_cast<uint64_t>(d);
    return n;
}

} // namespace

std::string offloadDtypeName(DType dtype)
{
    for (const NameMap &n : kNames) {
        if (n.dtype == dtype)
            return n.name;
    }
    return "float32";
}

Result<DType> parseOffloadDtypeName(const std::string &name)
{
    for (const NameMap &n : kNames) {
        if (name == n.name)
            return n.dtype;
    }
    return makeError(ErrorCode::InvalidInput, "unknown offload dtype \"" + name + "\"");
}

Result<OffloadFolder> OffloadFolder::open(const std::string &folder)
{
    OffloadFolder result;
    result.m_folder = folder;
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
        return makeError(ErrorCode::Io, "cannot create the offload folder: " + ec.message(), folder);
    const std::string indexPath = folder + "/index.json";
    if (!fs::exists(indexPath, ec))
        return result;
    // Through the input guard: 64 MiB, 64 levels, no key twice.
    jsonutil::JsonLimits limits;
    limits.rejectDuplicateKeys = true;
    auto text = fileutil::readFile(indexPath, limits.maxBytes);
    if (!text)
        return tl::unexpected(text.error());
    auto parsed = jsonutil::parseOrderedJson(*text, indexPath, limits);
    if (!parsed)
        return tl::unexpected(parsed.error());
    const nlohmann::ordered_json &index = *parsed;
    if (!index.is_object())
        return makeError(ErrorCode::InvalidInput, "index.json is not a JSON object", indexPath);
    for (auto it = index.begin(); it != index.end(); ++it) {
        const auto &v = it.value();
        OffloadEntry entry;
        try {
            if (v.contains("dtype"))
                entry.dtype = v.at("dtype").get<std::string>();
            if (v.contains("shape"))
                entry.shape = v.at("shape").get<std::vector<int64_t>>();
            if (v.contains("safetensors_file")) {
                entry.safetensorsFile = v.at("safetensors_file").get<std::string>();
                entry.weightName = v.value("weight_name", it.key());
            }
        } catch (const nlohmann::json::exception &) {
            return makeError(ErrorCode::InvalidInput,
                             "entry \"" + it.key() + "\" needs \"dtype\" (string) and \"shape\" (list of integers)",
                             indexPath);
        }
        if (entry.safetensorsFile.empty() && entry.dtype.empty())
            return makeError(ErrorCode::InvalidInput, "entry \"" + it.key() + "\" has no dtype", indexPath);
        result.m_entries.emplace_back(it.key(), std::move(entry));
    }
    return result;
}

const OffloadEntry *OffloadFolder::find(const std::string &name) const
{
    for (const auto &[n, entry] : m_entries) {
        if (n == name)
            return &entry;
    }
    return nullptr;
}

void OffloadFolder::put(const std::string &name, OffloadEntry entry)
{
    for (auto &[n, existing] : m_entries) {
        if (n == name) {
            existing = std::move(entry);
            return;
        }
    }
    m_entries.emplace_back(name, std::move(entry));
}

Result<void> OffloadFolder::writeTensor(const std::string &name, DType dtype, const std::vector<int64_t> &shape,
                                        const void *data, uint64_t size)
{
    const uint64_t expected = elementsOf(shape) * static_cast<uint64_t>(dtypeBits(dtype)) / 8;
    if (size != expected)
        return makeError(ErrorCode::InvalidInput,
                         "tensor \"" + name + "\": " + std::to_string(size) + " bytes given, shape and dtype need " +
                             std::to_string(expected),
                         m_folder);
    if (name.find('/') != std::string::npos || name.empty())
        return makeError(ErrorCode::InvalidInput, "tensor name \"" + name + "\" cannot be a file name", m_folder);
    fileutil::AtomicFileWriter writer;
    const std::string path = m_folder + "/" + name + ".dat";
    if (auto ok = writer.open(path); !ok)
        return ok;
    if (auto ok = writer.write(data, size); !ok)
        return ok;
    if (auto ok = writer.commit(); !ok)
        return ok;
    put(name, OffloadEntry{offloadDtypeName(dtype), shape, {}, {}});
    return {};
}

void OffloadFolder::addLazyTensor(const std::string &name, const std::string &safetensorsFile,
                                  const std::string &weightName, DType dtype, const std::vector<int64_t> &shape)
{
    put(name, OffloadEntry{offloadDtypeName(dtype), shape, safetensorsFile, weightName});
}

Result<void> OffloadFolder::save() const
{
    nlohmann::ordered_json index = nlohmann::ordered_json::object();
    for (const auto &[name, entry] : m_entries) {
        nlohmann::ordered_json e;
        if (!entry.safetensorsFile.empty()) {
            e["safetensors_file"] = entry.safetensorsFile;
            e["weight_name"] = entry.weightName;
            e["dtype"] = entry.dtype;
        } else {
            e["dtype"] = entry.dtype;
            e["shape"] = entry.shape;
        }
        index[name] = e;
    }
    return fileutil::writeFileAtomic(m_folder + "/index.json", index.dump(2));
}

Result<OffloadFolder::View> OffloadFolder::load(const std::string &name) const
{
    const OffloadEntry *entry = find(name);
    if (!entry)
        return makeError(ErrorCode::NotFound, "tensor \"" + name + "\" is not in index.json", m_folder);
    View view;
    if (!entry->safetensorsFile.empty()) {
        auto file = SafetensorsFile::open(entry->safetensorsFile);
        if (!file)
            return tl::unexpected(file.error());
        const TensorInfo *t = (*file)->find(entry->weightName);
        if (!t)
            return makeError(ErrorCode::NotFound, "tensor \"" + entry->weightName + "\" is not in the file",
                             entry->safetensorsFile);
        view.dtype = t->dtype;
        view.shape = t->shape;
        view.data = t->data;
        view.size = t->byteSize();
        view.keepAlive = *file;
        return view;
    }
    auto dtype = parseOffloadDtypeName(entry->dtype);
    if (!dtype)
        return makeError(ErrorCode::InvalidInput, "tensor \"" + name + "\": " + dtype.error().message,
                         m_folder + "/index.json");
    const std::string path = m_folder + "/" + name + ".dat";
    auto mapping = MappedFile::open(path);
    if (!mapping)
        return tl::unexpected(mapping.error());
    // 0-d tensors are stored as one element.
    const uint64_t expected =
        std::max<uint64_t>(1, elementsOf(entry->shape)) * static_cast<uint64_t>(dtypeBits(*dtype)) / 8;
    const uint64_t want = elementsOf(entry->shape) == 0 && !entry->shape.empty() ? 0 : expected;
    if ((*mapping)->size() != want)
        return makeError(ErrorCode::InvalidInput,
                         "has " + std::to_string((*mapping)->size()) + " bytes but index.json's dtype " + entry->dtype +
                             " and shape need " + std::to_string(want),
                         path);
    view.dtype = *dtype;
    view.shape = entry->shape;
    view.data = (*mapping)->data();
    view.size = (*mapping)->size();
    view.keepAlive = *mapping;
    return view;
}

} // namespace accel::bigmodel
