#include "core/inference/serverequest.h"

#include "core/common/jsondocument.h"
#include "core/common/text.h"
#include "core/inference/workeroptions.h"

#include <climits>
#include <cmath>
#include <istream>

namespace accel::inference {

namespace {

using nlohmann::json;

ServeRequestError requestError(const json &id, std::string message)
{
    return ServeRequestError{id, Error{ErrorCode::InvalidInput, std::move(message), {}}};
}

// A whole JSON number within [low, high]: 2 and 2.0 are, 2.5 and 1e300 are not. Floating values are
// compared before any conversion (casting an out-of-range double to an integer is undefined).
std::optional<int64_t> wholeNumber(const json &value, int64_t low, int64_t high)
{
    if (value.is_number_unsigned()) {
        const uint64_t v = value.get<uint64_t>();
        if (v > static_cast<uint64_t>(INT64_MAX) || static_cast<int64_t>(v) > high)
            return std::nullopt;
        return static_cast<int64_t>(v) >= low ? std::optional<int64_t>(static_cast<int64_t>(v)) : std::nullopt;
    }
    if (value.is_number_integer()) {
        const int64_t v = value.get<int64_t>();
        return v >= low && v <= high ? std::optional<int64_t>(v) : std::nullopt;
    }
    if (value.is_number_float()) {
        const double v = value.get<double>();
        // 2^63 is exactly representable; every double below it fits an int64_t.
        if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || std::floor(v) != v)
            return std::nullopt;
        const auto whole = static_cast<int64_t>(v);
        return whole >= low && whole <= high ? std::optional<int64_t>(whole) : std::nullopt;
    }
    return std::nullopt;
}

// The same for uint64_t (seeds): 0 .. 2^64-1.
std::optional<uint64_t> wholeUnsigned(const json &value)
{
    if (value.is_number_unsigned())
        return value.get<uint64_t>();
    if (value.is_number_integer()) {
        const int64_t v = value.get<int64_t>();
        return v >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(v)) : std::nullopt;
    }
    if (value.is_number_float()) {
        const double v = value.get<double>();
        if (!(v >= 0 && v < 18446744073709551616.0) || std::floor(v) != v)
            return std::nullopt;
        return static_cast<uint64_t>(v);
    }
    return std::nullopt;
}

// At most about 120 bytes of `text` (valid UTF-8), cut between characters.
std::string shortened(const std::string &text)
{
    if (text.size() <= 120)
        return text;
    size_t cut = 120;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return text.substr(0, cut) + "...";
}

std::string range(int64_t low, int64_t high)
{
    return "an integer from " + std::to_string(low) + " to " + std::to_string(high);
}

// Reads the fields of one request; the first wrong one is kept in `failure`, naming the op, the
// key, what it must be and the value it has.
class FieldReader {
public:
    FieldReader(const json &message, std::string op) : m_message(message), m_op(std::move(op)) {}

    const std::string &failure() const { return m_failure; }
    bool failed() const { return !m_failure.empty(); }

    // Every key must be one of `known` (a misspelt field is an error, not a default).
    void onlyKeys(const std::vector<const char *> &known)
    {
        for (auto it = m_message.begin(); it != m_message.end() && !failed(); ++it) {
            bool listed = false;
            for (const char *key : known)
                listed = listed || it.key() == key;
            if (!listed) {
                std::string names;
                for (const char *key : known)
                    names += std::string(names.empty() ? "" : ", ") + key;
                m_failure = m_op + ": unknown field " + jsonutil::jsonExcerpt(json(it.key())) + "; the fields of " +
                            m_op + " are " + names;
            }
        }
    }

    const json *find(const char *key) const
    {
        if (failed())
            return nullptr;
        const auto it = m_message.find(key);
        return it == m_message.end() ? nullptr : &*it;
    }

    void string(const char *key, std::string &out)
    {
        if (const json *value = find(key)) {
            if (value->is_string())
                out = value->get<std::string>();
            else
                fail(key, "a string", *value);
        }
    }

    void boolean(const char *key, bool &out)
    {
        if (const json *value = find(key)) {
            if (value->is_boolean())
                out = value->get<bool>();
            else
                fail(key, "true or false", *value);
        }
    }

    void number(const char *key, double &out)
    {
        if (const json *value = find(key)) {
            // JSON has no infinity (the parser refuses a literal beyond double's range); checked anyway.
            if (value->is_number() && std::isfinite(value->get<double>()))
                out = value->get<double>();
            else
                fail(key, "a finite number", *value);
        }
    }

    void integer(const char *key, int &out, int low = INT_MIN, int high = INT_MAX)
    {
        if (const json *value = find(key)) {
            if (const auto whole = wholeNumber(*value, low, high))
                out = static_cast<int>(*whole);
            else
                fail(key, range(low, high), *value);
        }
    }

    void seed(const char *key, uint64_t &out)
    {
        if (const json *value = find(key)) {
            if (const auto whole = wholeUnsigned(*value))
                out = *whole;
            else
                fail(key, "an integer from 0 to 18446744073709551615", *value);
        }
    }

    void integers(const char *key, std::vector<int64_t> &out)
    {
        const json *value = find(key);
        if (!value)
            return;
        if (!value->is_array())
            return fail(key, "an array of integers", *value);
        out.clear();
        for (const json &item : *value) {
            const auto whole = wholeNumber(item, INT64_MIN, INT64_MAX);
            if (!whole)
                return fail(key, "an array of integers (64-bit)", item);
            out.push_back(*whole);
        }
    }

    void strings(const char *key, std::vector<std::string> &out)
    {
        const json *value = find(key);
        if (!value)
            return;
        if (!value->is_array())
            return fail(key, "an array of strings", *value);
        out.clear();
        for (const json &item : *value) {
            if (!item.is_string())
                return fail(key, "an array of strings", item);
            out.push_back(item.get<std::string>());
        }
    }

    void fail(const char *key, const std::string &expected, const json &value)
    {
        if (!failed())
            m_failure = m_op + ": \"" + key + "\": expected " + expected + "; got " + jsonutil::jsonExcerpt(value);
    }
    void failWith(std::string message)
    {
        if (!failed())
            m_failure = std::move(message);
    }

private:
    const json &m_message;
    std::string m_op;
    std::string m_failure;
};

void readLoad(FieldReader &fields, ServeRequest &request)
{
    fields.onlyKeys({"op", "id", "model", "device_map", "max_memory", "offload_folder", "dtype", "threads", "adapter",
                     "quantization", "skip_modules", "keep_in_fp32_modules", "pin_threads"});
    fields.string("model", request.modelDir);
    if (!fields.failed() && request.modelDir.empty())
        fields.failWith("load: \"model\" (a model folder) is required");
    if (const json *map = fields.find("device_map")) {
        if (map->is_string())
            request.load.deviceMap = map->get<std::string>();
        else if (map->is_object())
            request.load.deviceMap = map->dump(); // checked by the loader (parseDeviceMapJson)
        else
            fields.fail("device_map", "\"auto\", \"cpu\" or an object of module -> device", *map);
    }
    fields.string("max_memory", request.load.maxMemory);
    fields.string("offload_folder", request.load.dispatch.offloadFolder);
    fields.string("adapter", request.load.adapterDir);
    fields.string("dtype", request.load.dispatch.computeDType);
    fields.integer("threads", request.load.threads, 0, kMaxThreads);
    fields.boolean("pin_threads", request.pinThreads);
    fields.string("quantization", request.load.quantization.method);
    if (auto method = parseQuantizationMethod(request.load.quantization.method); !method && !fields.failed())
        fields.failWith("load: " + method.error().message);
    if (fields.find("skip_modules")) {
        std::vector<std::string> skip;
        fields.strings("skip_modules", skip);
        request.load.quantization.skipModules = skip;
    }
    fields.strings("keep_in_fp32_modules", request.load.quantization.keepInFp32Modules);
}

void readGenerate(FieldReader &fields, ServeRequest &request)
{
    fields.onlyKeys({"op", "id", "prompt", "input_ids", "max_new_tokens", "greedy", "temperature", "top_k", "top_p",
                     "repetition_penalty", "seed", "stop", "stop_token_ids", "prefill_chunk"});
    if (fields.find("prompt") && fields.find("input_ids"))
        fields.failWith("generate: give \"prompt\" (text) or \"input_ids\" (token ids), not both");
    if (fields.find("prompt")) {
        std::string prompt;
        fields.string("prompt", prompt);
        request.prompt = std::move(prompt);
    }
    fields.integers("input_ids", request.inputIds);
    SamplingOptions &o = request.sampling;
    fields.integer("max_new_tokens", o.maxNewTokens);
    fields.integer("prefill_chunk", o.prefillChunk, 0);
    fields.boolean("greedy", o.greedy);
    fields.number("temperature", o.temperature);
    fields.integer("top_k", o.topK);
    fields.number("top_p", o.topP);
    fields.number("repetition_penalty", o.repetitionPenalty);
    fields.seed("seed", o.seed);
    fields.strings("stop", o.stopStrings);
    fields.integers("stop_token_ids", o.stopTokenIds);
}

} // namespace

bool readServeRequestLine(std::istream &in, std::string &line, bool &tooLong, size_t maxBytes)
{
    line.clear();
    tooLong = false;
    std::streambuf *buffer = in.rdbuf();
    for (;;) {
        const int c = buffer->sbumpc();
        if (c == std::char_traits<char>::eof())
            return !line.empty() || tooLong;
        if (c == '\n')
            return true;
        if (line.size() < maxBytes)
            line.push_back(static_cast<char>(c));
        else
            tooLong = true;
    }
}

ServeRequestError serveLineTooLong(size_t maxBytes)
{
    return requestError(nullptr, "request longer than " + std::to_string(maxBytes) + " bytes; ignored");
}

bool isBlankServeLine(std::string_view line)
{
    return text::trim(line).empty();
}

ServeRequestResult parseServeRequest(std::string_view line)
{
    auto parsed = jsonutil::parseJson(line, {});
    if (!parsed)
        return tl::unexpected(requestError(nullptr, "not a JSON line: " + parsed.error().message));
    const json &message = *parsed;
    if (!message.is_object())
        return tl::unexpected(requestError(nullptr, "expected a JSON object such as {\"op\":\"load\",...}; got " +
                                                        jsonutil::jsonExcerpt(message)));
    ServeRequest request;
    if (const auto id = message.find("id"); id != message.end())
        request.id = *id;
    const auto opValue = message.find("op");
    const std::string op = opValue == message.end() ? std::string()
                           : opValue->is_string()   ? opValue->get<std::string>()
                                                    : jsonutil::jsonExcerpt(*opValue);
    FieldReader fields(message, op);
    if (op == "load") {
        request.op = ServeOp::Load;
        readLoad(fields, request);
    } else if (op == "generate") {
        request.op = ServeOp::Generate;
        readGenerate(fields, request);
    } else if (op == "cancel" || op == "unload" || op == "shutdown") {
        request.op = op == "cancel" ? ServeOp::Cancel : op == "unload" ? ServeOp::Unload : ServeOp::Shutdown;
        fields.onlyKeys({"op", "id"});
    } else {
        return tl::unexpected(requestError(
            request.id, "op: expected load, generate, cancel, unload or shutdown; got '" + shortened(op) + "'"));
    }
    if (fields.failed())
        return tl::unexpected(requestError(request.id, fields.failure()));
    return request;
}

} // namespace accel::inference
