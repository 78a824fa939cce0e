#include "core/plan/torchsaveblob.h"

#include "core/plan/pickle.h"

#include <zip.h>

#include <cstring>
#include <memory>

namespace accel::runtime {

namespace {

using bigmodel::DType;
using Kind = PickleValue::Kind;

// The legacy storage classes torch.save names (torch/storage.py, _dtype_to_storage_type_map).
// Newer dtypes (float8, uint16, ...) are saved as torch.storage.UntypedStorage with the dtype
// given to torch._utils._rebuild_tensor_v3.
struct StorageClass {
    DType dtype;
    const char *name;
};
constexpr StorageClass kStorageClasses[] = {
    {DType::F64, "DoubleStorage"},    {DType::F32, "FloatStorage"}, {DType::F16, "HalfStorage"},
    {DType::I64, "LongStorage"},      {DType::I32, "IntStorage"},   {DType::I16, "ShortStorage"},
    {DType::I8, "CharStorage"},       {DType::U8, "ByteStorage"},   {DType::Bool, "BoolStorage"},
    {DType::BF16, "BFloat16Storage"},
};

PickleAllowList tensorAllowList()
{
    PickleAllowList allowed = {"torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
                               "torch.storage.UntypedStorage", "collections.OrderedDict"};
    for (const StorageClass &c : kStorageClasses)
        allowed.push_back(std::string("torch.") + c.name);
    for (const std::string &global : torchDTypeGlobals())
        allowed.push_back(global);
    return allowed;
}

// A libzip archive over bytes in memory, closed on scope exit.
struct ZipCloser {
    void operator()(zip_t *archive) const { zip_discard(archive); }
};
using ZipArchive = std::unique_ptr<zip_t, ZipCloser>;

bool wholeNumber(PickleRef value, int64_t *out)
{
    if (!value || value->kind != Kind::Int)
        return false;
    *out = value->integer;
    return true;
}

bool wholeNumbers(PickleRef value, std::vector<int64_t> *out)
{
    if (!value || value->kind != Kind::Tuple)
        return false;
    out->clear();
    for (const PickleRef &item : value->items) {
        int64_t n = 0;
        if (!wholeNumber(item, &n) || n < 0)
            return false;
        out->push_back(n);
    }
    return true;
}

} // namespace

std::vector<std::string> torchDTypeGlobals()
{
    std::vector<std::string> globals;
    for (const std::string &code : bigmodel::allDTypeCodes())
        if (auto dtype = bigmodel::parseDTypeCode(code))
            globals.push_back("torch." + bigmodel::torchName(*dtype));
    return globals;
}

std::optional<DType> dtypeOfTorchGlobal(const std::string &global)
{
    for (const std::string &code : bigmodel::allDTypeCodes())
        if (auto dtype = bigmodel::parseDTypeCode(code); dtype && global == "torch." + bigmodel::torchName(*dtype))
            return *dtype;
    return std::nullopt;
}

Result<SavedTensor> readTorchSavedTensor(const std::string &blob, const std::string &what)
{
    const auto invalid = [&what](const std::string &message) {
        return makeError(ErrorCode::InvalidInput, "torch.save blob: " + message, what);
    };
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *source = zip_source_buffer_create(blob.data(), blob.size(), 0, &error);
    ZipArchive archive(source ? zip_open_from_source(source, ZIP_RDONLY, &error) : nullptr);
    if (!archive) {
        const std::string message = zip_error_strerror(&error);
        zip_error_fini(&error);
        if (source)
            zip_source_free(source);
        return invalid("not a zip archive (" + message + ")");
    }
    zip_error_fini(&error);
    // Entries by name; the archive's folder is whatever torch.save named it ("archive" for a stream).
    const auto entry = [&](const std::string &suffix, std::string *content, std::string *prefix) -> bool {
        const zip_int64_t count = zip_get_num_entries(archive.get(), 0);
        for (zip_int64_t i = 0; i < count; ++i) {
            const char *name = zip_get_name(archive.get(), zip_uint64_t(i), 0);
            const std::string n = name ? name : "";
            const size_t slash = n.find('/');
            if (slash == std::string::npos || n.compare(slash, std::string::npos, suffix) != 0 ||
                (prefix && !prefix->empty() && n.compare(0, slash, *prefix) != 0))
                continue;
            zip_stat_t stat;
            if (zip_stat_index(archive.get(), zip_uint64_t(i), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE) ||
                stat.size > blob.size())
                return false;
            std::unique_ptr<zip_file_t, int (*)(zip_file_t *)> file(zip_fopen_index(archive.get(), zip_uint64_t(i), 0),
                                                                    zip_fclose);
            if (!file)
                return false;
            content->resize(size_t(stat.size));
            if (zip_fread(file.get(), content->data(), stat.size) != zip_int64_t(stat.size))
                return false;
            if (prefix && prefix->empty())
                *prefix = n.substr(0, slash);
            return true;
        }
        return false;
    };
    std::string prefix, pickleBytes;
    if (!entry("/data.pkl", &pickleBytes, &prefix))
        return invalid("no readable <archive>/data.pkl entry");
    std::string byteOrder;
    if (entry("/byteorder", &byteOrder, &prefix) && byteOrder != "little")
        return invalid("byteorder is \"" + byteOrder + "\"; only little-endian tensors are read");
    auto root = readPickle(pickleBytes, tensorAllowList(), what + ": data.pkl");
    if (!root)
        return tl::unexpected(root.error());
    const PickleRef tensor = root->root;
    const bool v3 = tensor->kind == Kind::Object && tensor->text == "torch._utils._rebuild_tensor_v3";
    if (tensor->kind != Kind::Object || (!v3 && tensor->text != "torch._utils._rebuild_tensor_v2") ||
        tensor->items.size() < (v3 ? 7u : 4u))
        return invalid("data.pkl does not hold one tensor (torch._utils._rebuild_tensor_v2 or _v3)");
    const auto &args = tensor->items;
    // args[0]: persistent id ("storage", storage class, key, location, numel)
    const PickleRef id = args[0] && args[0]->kind == Kind::PersistentId ? args[0]->items[0] : nullptr;
    if (!id || id->kind != Kind::Tuple || id->items.size() != 5 || id->items[0]->kind != Kind::Text ||
        id->items[0]->text != "storage" || id->items[1]->kind != Kind::Global || id->items[2]->kind != Kind::Text)
        return invalid("data.pkl: the tensor's storage is not (\"storage\", class, key, location, numel)");
    SavedTensor saved;
    const std::string storageClass = id->items[1]->text;
    bool known = false;
    if (v3) {
        const PickleRef &dtype = args[6];
        const auto d = dtype && dtype->kind == Kind::Global ? dtypeOfTorchGlobal(dtype->text) : std::nullopt;
        known = d.has_value();
        saved.dtype = d.value_or(saved.dtype);
    } else {
        for (const StorageClass &c : kStorageClasses)
            if (storageClass == std::string("torch.") + c.name) {
                saved.dtype = c.dtype;
                known = true;
            }
    }
    if (!known)
        return invalid("data.pkl: storage " + storageClass + " has no dtype this reader knows");
    const uint64_t elementBits = uint64_t(bigmodel::dtypeBits(saved.dtype));
    int64_t storageCount = 0, offset = 0;
    std::vector<int64_t> stride;
    if (!wholeNumber(id->items[4], &storageCount) || storageCount < 0 || !wholeNumber(args[1], &offset) || offset < 0 ||
        !wholeNumbers(args[2], &saved.size) || !wholeNumbers(args[3], &stride) || stride.size() != saved.size.size())
        return invalid("data.pkl: storage size, offset, size or stride is not whole numbers >= 0");
    if (elementBits % 8 != 0)
        return invalid("data.pkl: " + bigmodel::torchName(saved.dtype) + " is not a whole number of bytes");
    const uint64_t elementBytes = elementBits / 8;
    // UntypedStorage counts bytes, the legacy classes count elements.
    const uint64_t storageBytes = v3 ? uint64_t(storageCount) : uint64_t(storageCount) * elementBytes;
    if (storageBytes > blob.size())
        return invalid("data.pkl: a storage of " + std::to_string(storageBytes) + " bytes in a blob of " +
                       std::to_string(blob.size()));
    uint64_t count = 1;
    int64_t expected = 1;
    for (size_t d = saved.size.size(); d-- > 0;) {
        if (saved.size[d] != 1 && stride[d] != expected)
            return invalid("data.pkl: strides are not in C order (a non-contiguous tensor)");
        expected *= saved.size[d];
        count *= uint64_t(saved.size[d]);
        if (count > storageBytes + 1)
            return invalid("data.pkl: the tensor's size reaches past its storage");
    }
    if (count > 0 && (uint64_t(offset) > storageBytes || (uint64_t(offset) + count) * elementBytes > storageBytes))
        return invalid("data.pkl: the tensor's size reaches past its storage");
    std::string storage;
    const std::string key = id->items[2]->text;
    if (!entry("/data/" + key, &storage, &prefix))
        return invalid("no readable entry " + prefix + "/data/" + key);
    if (storage.size() != storageBytes)
        return invalid("storage " + key + " holds " + std::to_string(storage.size()) + " bytes, data.pkl says " +
                       std::to_string(storageBytes));
    const size_t first = size_t(uint64_t(offset) * elementBytes);
    if (count > 0)
        saved.bytes.assign(storage.begin() + long(first), storage.begin() + long(first + count * elementBytes));
    return saved;
}

} // namespace accel::runtime
