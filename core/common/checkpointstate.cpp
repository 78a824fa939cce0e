#include "core/common/checkpointstate.h"

#include "core/common/jsondocument.h"

namespace accel::checkpointstate {

namespace {

jsonutil::JsonLimits stateLimits()
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxStateFileBytes;
    limits.rejectDuplicateKeys = true;
    return limits;
}

// `key` of `object` as a whole number >= 0, or an error naming the key, its value and the file.
Result<int64_t> count(const nlohmann::json &object, const char *key, const std::string &where, const std::string &path)
{
    const auto it = object.is_object() ? object.find(key) : object.end();
    if (it == object.end())
        return makeError(ErrorCode::InvalidInput, where + key + ": missing", path);
    const auto number = jsonutil::integerValue(*it, 0);
    if (!number)
        return makeError(ErrorCode::InvalidInput,
                         where + key + "=" + jsonutil::jsonExcerpt(*it) +
                             ": expected a whole number from 0 to 9223372036854775807",
                         path);
    return *number;
}

} // namespace

Result<int64_t> readSchedulerLastStep(const std::string &path)
{
    auto state = jsonutil::readJsonFile(path, stateLimits());
    if (!state)
        return tl::unexpected(state.error());
    return count(*state, "last_step", "", path);
}

Result<std::vector<LoaderState>> readLoaderStates(const std::string &path)
{
    auto states = jsonutil::readJsonFile(path, stateLimits());
    if (!states)
        return tl::unexpected(states.error());
    if (!states->is_array())
        return makeError(ErrorCode::InvalidInput,
                         "expected a list of {\"epoch\", \"batches_done\"}, got " + jsonutil::jsonExcerpt(*states),
                         path);
    std::vector<LoaderState> out;
    for (size_t i = 0; i < states->size(); ++i) {
        const std::string where = "[" + std::to_string(i) + "].";
        auto epoch = count((*states)[i], "epoch", where, path);
        if (!epoch)
            return tl::unexpected(epoch.error());
        auto done = count((*states)[i], "batches_done", where, path);
        if (!done)
            return tl::unexpected(done.error());
        out.push_back({*epoch, *done});
    }
    return out;
}

} // namespace accel::checkpointstate
