#include "core/common/jsondocument.h"

#include "core/common/fileutil.h"
#include "core/common/utf8.h"

#include <limits>
#include <new>
#include <vector>

namespace accel::jsonutil {

namespace {

using json = nlohmann::json;

// Builds the document from nlohmann's SAX events with an explicit stack of the open containers,
// so depth and duplicate keys are checked as they appear. (nlohmann's parser callbacks would do
// the same but rescan the parent object at every closing brace: quadratic in its size.)
template <typename Json>
class GuardedBuilder {
public:
    GuardedBuilder(Json &root, const JsonLimits &limits) : m_root(root), m_limits(limits) {}

    bool null() { return place(Json(nullptr)) != nullptr; }
    bool boolean(bool value) { return place(Json(value)) != nullptr; }
    bool number_integer(typename Json::number_integer_t value) { return place(Json(value)) != nullptr; }
    bool number_unsigned(typename Json::number_unsigned_t value) { return place(Json(value)) != nullptr; }
    bool number_float(typename Json::number_float_t value, const typename Json::string_t &)
    {
        return place(Json(value)) != nullptr;
    }
    bool string(typename Json::string_t &value) { return place(Json(std::move(value))) != nullptr; }
    bool binary(typename Json::binary_t &value) { return place(Json::binary(std::move(value))) != nullptr; }
    bool start_object(std::size_t) { return open(Json::value_t::object); }
    bool start_array(std::size_t) { return open(Json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(typename Json::string_t &name)
    {
        Json &object = *m_stack.back();
        if (m_limits.rejectDuplicateKeys && object.contains(name)) {
            m_failure = "duplicate key \"" + name + "\"" + (m_limits.subject.empty() ? "" : " in " + m_limits.subject);
            return false;
        }
        m_slot = &object[std::move(name)];
        return true;
    }

    bool parse_error(std::size_t, const std::string &, const nlohmann::json::exception &error)
    {
        std::string what = error.what();
        const size_t bracket = what.find("] ");
        if (bracket != std::string::npos)
            what = what.substr(bracket + 2);
        // nlohmann quotes the bytes it read last as they are: a message must stay valid UTF-8 to be
        // written into JSON (an event, a --json answer) at all.
        m_failure =
            (m_limits.subject.empty() ? "" : m_limits.subject + " is ") + "not valid JSON: " + utf8::toValid(what);
        return false;
    }

    const std::string &failure() const { return m_failure; }

private:
    Json *place(Json value)
    {
        if (m_stack.empty()) {
            m_root = std::move(value);
            return &m_root;
        }
        Json &parent = *m_stack.back();
        if (parent.is_array()) {
            parent.push_back(std::move(value));
            return &parent.back();
        }
        *m_slot = std::move(value);
        return m_slot;
    }

    bool open(json::value_t type)
    {
        if (m_stack.size() >= static_cast<size_t>(m_limits.maxDepth)) {
            m_failure = (m_limits.subject.empty() ? std::string("JSON") : m_limits.subject) + " nested deeper than " +
                        std::to_string(m_limits.maxDepth) + " levels";
            return false;
        }
        m_stack.push_back(place(Json(type)));
        return true;
    }

    bool close()
    {
        m_stack.pop_back();
        return true;
    }

    Json &m_root;
    const JsonLimits &m_limits;
    std::vector<Json *> m_stack; // the open containers, outermost first
    Json *m_slot = nullptr;      // the value of the key just read
    std::string m_failure;
};

template <typename Json>
Result<Json> parseGuarded(std::string_view text, const std::string &source, const JsonLimits &limits)
{
    if (text.size() > limits.maxBytes)
        return makeError(ErrorCode::InvalidInput,
                         (limits.subject.empty() ? std::string() : limits.subject + " ") + "too large: " +
                             std::to_string(text.size()) + " bytes (limit " + std::to_string(limits.maxBytes) + ")",
                         source);
    Json root;
    GuardedBuilder<Json> builder(root, limits);
    try {
        if (!Json::sax_parse(text.begin(), text.end(), &builder) || !builder.failure().empty())
            return makeError(ErrorCode::InvalidInput,
                             builder.failure().empty() ? std::string("not valid JSON") : builder.failure(), source);
    } catch (const std::bad_alloc &) {
        return makeError(ErrorCode::InvalidInput, "not enough memory to hold the JSON document", source);
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, "not valid JSON: " + utf8::toValid(e.what()), source);
    }
    return root;
}

} // namespace

Result<json> parseJson(std::string_view text, const std::string &source, const JsonLimits &limits)
{
    return parseGuarded<json>(text, source, limits);
}

Result<nlohmann::ordered_json> parseOrderedJson(std::string_view text, const std::string &source,
                                                const JsonLimits &limits)
{
    return parseGuarded<nlohmann::ordered_json>(text, source, limits);
}

Result<json> readJsonFile(const std::string &path, const JsonLimits &limits)
{
    auto text = fileutil::readFile(path, limits.maxBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parseJson(*text, path, limits);
}

std::optional<int64_t> integerValue(const json &value)
{
    if (value.is_number_unsigned()) {
        const uint64_t number = value.get<uint64_t>();
        if (number > uint64_t(std::numeric_limits<int64_t>::max()))
            return std::nullopt;
        return int64_t(number);
    }
    if (value.is_number_integer())
        return value.get<int64_t>();
    return std::nullopt;
}

std::optional<int64_t> integerValue(const json &value, int64_t minimum)
{
    const auto number = integerValue(value);
    return number && *number >= minimum ? number : std::nullopt;
}

std::string jsonExcerpt(const json &value, size_t maxChars)
{
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > maxChars) {
        size_t cut = maxChars;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
            --cut; // not inside a UTF-8 sequence
        text = text.substr(0, cut) + "...";
    }
    return text;
}

} // namespace accel::jsonutil
