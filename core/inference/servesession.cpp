#include "core/inference/servesession.h"

#include "core/common/jsondocument.h"
#include "core/inference/causallm.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/textcodec.h"
#include "core/inference/workeroptions.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <istream>
#include <mutex>
#include <ostream>
#include <thread>

namespace accel::inference {

namespace {

using nlohmann::json;

// A prompt of several megabytes is plausible; a request line beyond this is not.
constexpr size_t kMaxRequestBytes = 64u << 20;

// The request's "op" ("" when missing; a value that is not a string as its JSON text).
std::string opOf(const json &message)
{
    if (!message.is_object())
        return {};
    const auto op = message.find("op");
    if (op == message.end())
        return {};
    return op->is_string() ? op->get<std::string>() : jsonutil::jsonExcerpt(*op);
}

class Session {
public:
    Session(std::istream &in, std::ostream &out) : m_in(in), m_out(out) {}
    int run();

private:
    void emit(const nlohmann::ordered_json &event);
    void error(const json &id, const Error &e);
    void readLoop();
    void handle(const json &message);
    void dispatch(const std::string &op, const json &message, const json &id);
    void load(const json &message, const json &id);
    void generateRequest(const json &message, const json &id);

    std::istream &m_in;
    std::ostream &m_out;
    std::mutex m_outMutex;
    std::mutex m_queueMutex;
    std::condition_variable m_queueReady;
    std::deque<json> m_queue;
    bool m_inputEnded = false;
    std::atomic<bool> m_cancel{false};
    std::unique_ptr<InferenceModel> m_model;
    TextCodec m_codec;
};

void Session::emit(const nlohmann::ordered_json &event)
{
    std::lock_guard<std::mutex> lock(m_outMutex);
    m_out << event.dump() << "\n";
    m_out.flush();
}

void Session::error(const json &id, const Error &e)
{
    emit({{"event", "error"}, {"id", id}, {"code", errorCodeName(e.code)}, {"message", e.toString()}});
}

// Reads one line of at most kMaxRequestBytes (without its newline) into `line`; a longer one is
// skipped to its end and `tooLong` set. False at the end of the input.
bool readRequestLine(std::istream &in, std::string &line, bool &tooLong)
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
        if (line.size() < kMaxRequestBytes)
            line.push_back(static_cast<char>(c));
        else
            tooLong = true;
    }
}

void Session::readLoop()
{
    std::string line;
    bool tooLong = false;
    while (readRequestLine(m_in, line, tooLong)) {
        if (tooLong) {
            error(nullptr, Error{ErrorCode::InvalidInput,
                                 "request longer than " + std::to_string(kMaxRequestBytes) + " bytes; ignored",
                                 {}});
            continue;
        }
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        auto parsed = jsonutil::parseJson(line, {});
        if (!parsed) {
            error(nullptr, Error{ErrorCode::InvalidInput, "not a JSON line: " + parsed.error().message, {}});
            continue;
        }
        json message = std::move(*parsed);
        // Cancel acts at once, even while a generation is running.
        if (opOf(message) == "cancel") {
            m_cancel = true;
            continue;
        }
        std::lock_guard<std::mutex> lock(m_queueMutex);
        m_queue.push_back(std::move(message));
        m_queueReady.notify_one();
    }
    std::lock_guard<std::mutex> lock(m_queueMutex);
    m_inputEnded = true;
    m_queueReady.notify_one();
}

int Session::run()
{
    emit({{"event", "ready"}, {"schema", "accel.worker-protocol"}, {"version", 1}});
    std::thread reader(&Session::readLoop, this);
    reader.detach(); // blocked reading until the pipe closes; nothing of it outlives the data it uses
    while (true) {
        json message;
        {
            std::unique_lock<std::mutex> lock(m_queueMutex);
            m_queueReady.wait(lock, [&] { return !m_queue.empty() || m_inputEnded; });
            if (m_queue.empty())
                return 0;
            message = std::move(m_queue.front());
            m_queue.pop_front();
        }
        if (opOf(message) == "shutdown") {
            emit({{"event", "bye"}});
            return 0;
        }
        handle(message);
    }
}

void Session::handle(const json &message)
{
    const json id = message.is_object() && message.contains("id") ? message["id"] : json(nullptr);
    const std::string op = opOf(message);
    try {
        dispatch(op, message, id);
    } catch (const std::exception &e) {
        // A field of the wrong type read by json::value(): the request is refused, the worker lives.
        error(id, Error{ErrorCode::InvalidInput, op + ": " + e.what(), {}});
    }
}

void Session::dispatch(const std::string &op, const json &message, const json &id)
{
    if (op == "load") {
        load(message, id);
    } else if (op == "generate") {
        generateRequest(message, id);
    } else if (op == "unload") {
        m_model.reset();
        m_codec = TextCodec();
        emit({{"event", "unloaded"}, {"id", id}});
    } else {
        error(id, Error{ErrorCode::InvalidInput,
                        "op: expected load, generate, cancel, unload or shutdown; got '" + op + "'",
                        {}});
    }
}

void Session::load(const json &message, const json &id)
{
    const std::string dir = message.value("model", "");
    if (dir.empty())
        return error(id, Error{ErrorCode::InvalidInput, "load: \"model\" (a model folder) is required", {}});
    auto options = loadOptionsFromJson(message);
    if (!options)
        return error(id, options.error());
    m_model.reset();
    auto model = InferenceModel::load(dir, *options);
    if (!model)
        return error(id, model.error());
    auto codec = TextCodec::forModel(dir);
    if (!codec)
        return error(id, codec.error());
    m_model = std::move(*model);
    m_codec = *codec;
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const auto &[key, device] : m_model->deviceMap())
        map[key] = device;
    const auto &report = m_model->report();
    emit({{"event", "loaded"},
          {"id", id},
          {"model", dir},
          {"model_type", m_model->config().modelType},
          {"vocab_size", m_model->config().vocabSize},
          {"layers", m_model->config().numLayers},
          {"tokenizer", m_codec.hasTokenizer()},
          {"device_map", map},
          {"resident_tensors", report.residentTensors},
          {"offloaded_tensors", report.offloadedTensors},
          {"zero_copy_tensors", report.zeroCopyTensors}});
}

void Session::generateRequest(const json &message, const json &id)
{
    if (!m_model)
        return error(id, Error{ErrorCode::InvalidInput, "generate: no model loaded (send a load request first)", {}});
    auto sampling = samplingFromJson(message);
    if (!sampling)
        return error(id, sampling.error());
    std::vector<int64_t> ids;
    try {
        if (message.contains("input_ids"))
            ids = message["input_ids"].get<std::vector<int64_t>>();
        else if (message.contains("prompt")) {
            if (!m_codec.hasTokenizer())
                return error(id, Error{ErrorCode::InvalidInput,
                                       "generate: \"prompt\" needs the model's tokenizer.json; send \"input_ids\"",
                                       {}});
            ids = m_codec.encode(message["prompt"].get<std::string>());
        }
    } catch (const json::exception &e) {
        return error(id, Error{ErrorCode::InvalidInput, std::string("generate: ") + e.what(), {}});
    }
    m_cancel = false;
    int64_t index = 0;
    auto result = generate(
        *m_model, {ids}, *sampling,
        [&](size_t, int64_t token, const std::string &piece) {
            emit({{"event", "token"}, {"id", id}, {"index", index++}, {"token", token}, {"text", piece}});
            return !m_cancel.load();
        },
        m_codec.decoder());
    if (!result)
        return error(id, result.error());
    const auto &seq = result->sequences[0];
    emit({{"event", "done"},
          {"id", id},
          {"tokens", seq.tokens},
          {"text", seq.text},
          {"stop_reason", seq.stopReason},
          {"stats", statsToJson(result->stats)}});
}

} // namespace

int runServe(std::istream &in, std::ostream &out)
{
    // The session lives for the whole process: the detached reader may still be blocked on input.
    static Session *session = nullptr;
    session = new Session(in, out);
    return session->run();
}

} // namespace accel::inference
