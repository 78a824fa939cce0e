#include "core/common/jsondocument.h"

#include "core/common/fileutil.h"
#include "core/common/utf8.h"

#include <new>
#include <vector>

namespace accel::jsonutil {

namespace {

using json = nlohmann::json;

// Builds the document from nlohmann's SAX events with an explicit stack of the open containers,
// so depth and duplicate keys are checked as they appear. (nlohmann's parser callbacks would do
// the same but rescan the parent object at every closing brace: quadratic in its size.)
class GuardedBuilder {
public:
    GuardedBuilder(json &root, const JsonLimits &limits) : m_root(root), m_limits(limits) {}

    bool null() { return place(json(nullptr)) != nullptr; }
    bool boolean(bool value) { return place(json(value)) != nullptr; }
    bool number_integer(json::number_integer_t value) { return place(json(value)) != nullptr; }
    bool number_unsigned(json::number_unsigned_t value) { return place(json(value)) != nullptr; }
    bool number_float(json::number_float_t value, const json::string_t &) { return place(json(value)) != nullptr; }
    bool string(json::string_t &value) { return place(json(std::move(value))) != nullptr; }
    bool binary(json::binary_t &value) { return place(json::binary(std::move(value))) != nullptr; }
    bool start_object(std::size_t) { return open(json::value_t::object); }
    bool start_array(std::size_t) { return open(json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(json::string_t &name)
    {
        json &object = *m_stack.back();
        if (m_limits.rejectDuplicateKeys && object.contains(name)) {
            m_failure = "duplicate key \"" + name + "\"" + (m_limits.subject.empty() ? "" : " in " + m_limits.subject);
            return false;
        }
        m_slot = &object[std::move(name)];
        return true;
    }

    bool parse_error(std::size_t, const std::string &, const json::exception &error)
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
    json *place(json value)
    {
        if (m_stack.empty()) {
            m_root = std::move(value);
            return &m_root;
        }
        json &parent = *m_stack.back();
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
        m_stack.push_back(place(json(type)));
        return true;
    }

    bool close()
    {
        m_stack.pop_back();
        return true;
    }

    json &m_root;
    const JsonLimits &m_limits;
    std::vector<json *> m_stack; // the open containers, outermost first
    json *m_slot = nullptr;      // the value of the key just read
    std::string m_failure;
};

} // namespace

Result<json> parseJson(std::string_view text, const std::string &source, const JsonLimits &limits)
{
    if (text.size() > limits.maxBytes)
        return makeError(ErrorCode::InvalidInput,
                         (limits.subject.empty() ? std::string() : limits.subject + " ") + "too large: " +
                             std::to_string(text.size()) + " bytes (limit " + std::to_string(limits.maxBytes) + ")",
                         source);
    json root;
    GuardedBuilder builder(root, limits);
    try {
        if (!json::sax_parse(text.begin(), text.end(), &builder) || !builder.failure().empty())
            return makeError(ErrorCode::InvalidInput,
                             builder.failure().empty() ? std::string("not valid JSON") : builder.failure(), source);
    } catch (const std::bad_alloc &) {
        return makeError(ErrorCode::InvalidInput, "not enough memory to hold the JSON document", source);
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, "not valid JSON: " + utf8::toValid(e.what()), source);
    }
    return root;
}

Result<json> readJsonFile(const std::string &path, const JsonLimits &limits)
{
    auto text = fileutil::readFile(path, limits.maxBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parseJson(*text, path, limits);
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
