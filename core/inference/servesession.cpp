#include "core/inference/servesession.h"

#include "core/inference/causallm.h"
#include "core/inference/decodebound.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/serverequest.h"
#include "core/inference/textcodec.h"
#include "core/inference/workeroptions.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <istream>
#include <mutex>
#include <new>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace accel::inference {

namespace {

using nlohmann::json;

class Session {
public:
    Session(std::istream &in, std::ostream &out) : m_in(in), m_out(out) {}
    int run();

private:
    void emit(const nlohmann::ordered_json &event);
    void error(const json &id, const Error &e);
    void readLoop();
    void handle(const ServeRequest &request);
    void load(const ServeRequest &request);
    void generateRequest(const ServeRequest &request);

    std::istream &m_in;
    std::ostream &m_out;
    std::mutex m_outMutex;
    std::mutex m_queueMutex;
    std::condition_variable m_queueReady;
    std::deque<ServeRequestResult> m_queue; // requests and refused lines, answered in order
    bool m_inputEnded = false;
    std::atomic<bool> m_cancel{false};
    std::unique_ptr<InferenceModel> m_model;
    TextCodec m_codec;
    bool m_pinned = false; // the intra-op threads are pinned (a load with pin_threads)
};

void Session::emit(const nlohmann::ordered_json &event)
{
    std::lock_guard<std::mutex> lock(m_outMutex);
    // Replacement characters rather than an exception for text that is not UTF-8 (a token piece,
    // a message quoting input): an event that cannot be written would end the session.
    m_out << event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    m_out.flush();
}

void Session::error(const json &id, const Error &e)
{
    emit({{"event", "error"}, {"id", id}, {"code", errorCodeName(e.code)}, {"message", e.toString()}});
}

void Session::readLoop()
{
    std::string line;
    bool tooLong = false;
    while (readServeRequestLine(m_in, line, tooLong)) {
        if (!tooLong && isBlankServeLine(line))
            continue;
        ServeRequestResult request = tooLong ? tl::unexpected(serveLineTooLong()) : parseServeRequest(line);
        // Cancel acts at once, even while a generation is running.
        if (request && request->op == ServeOp::Cancel) {
            m_cancel = true;
            continue;
        }
        std::lock_guard<std::mutex> lock(m_queueMutex);
        m_queue.push_back(std::move(request));
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
        std::optional<ServeRequestResult> request;
        {
            std::unique_lock<std::mutex> lock(m_queueMutex);
            m_queueReady.wait(lock, [&] { return !m_queue.empty() || m_inputEnded; });
            if (m_queue.empty())
                return 0;
            request = std::move(m_queue.front());
            m_queue.pop_front();
        }
        if (!*request) {
            error(request->error().id, request->error().error);
            continue;
        }
        if ((*request)->op == ServeOp::Shutdown) {
            emit({{"event", "bye"}});
            return 0;
        }
        try {
            handle(**request);
        } catch (const std::exception &e) {
            error((*request)->id, Error{ErrorCode::Failed, e.what(), {}});
        }
    }
}

void Session::handle(const ServeRequest &request)
{
    switch (request.op) {
    case ServeOp::Load:
        return load(request);
    case ServeOp::Generate:
        return generateRequest(request);
    case ServeOp::Unload:
        m_model.reset();
        m_codec = TextCodec();
        return emit({{"event", "unloaded"}, {"id", request.id}});
    case ServeOp::Cancel:
    case ServeOp::Shutdown:
        return; // taken by the reader and the loop
    }
}

void Session::load(const ServeRequest &request)
{
    const json &id = request.id;
    const std::string &dir = request.modelDir;
    m_model.reset();
    LoadOptions options = request.load;
    // "dtype": "auto" and "pin_threads" as accel generate's --dtype auto and --pin-threads.
    std::optional<DecodeDTypeChoice> dtypeChoice;
    if (options.dispatch.computeDType == kAutoComputeDType) {
        auto choice = chooseModelDecodeDType(dir, options.threads);
        if (!choice)
            return error(id, choice.error());
        dtypeChoice = *choice;
        options.dispatch.computeDType = choice->dtype;
    }
    auto model = InferenceModel::load(dir, options);
    if (!model)
        return error(id, model.error());
    auto codec = TextCodec::forModel(dir);
    if (!codec)
        return error(id, codec.error());
    std::vector<int> pinnedCpus;
    if (request.pinThreads) {
        auto pinned = pinIntraOpThreads();
        if (!pinned)
            return error(id, Error{pinned.error().code, "load: pin_threads: " + pinned.error().message, {}});
        pinnedCpus = *pinned;
    } else if (m_pinned) {
        if (auto unpinned = unpinIntraOpThreads(); !unpinned)
            return error(id, Error{unpinned.error().code, "load: unpinning threads: " + unpinned.error().message, {}});
    }
    m_pinned = request.pinThreads;
    m_model = std::move(*model);
    m_codec = *codec;
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const auto &[key, device] : m_model->deviceMap())
        map[key] = device;
    const auto &report = m_model->report();
    nlohmann::ordered_json loaded = {{"event", "loaded"},
                                     {"id", id},
                                     {"model", dir},
                                     {"model_type", m_model->config().modelType},
                                     {"vocab_size", m_model->config().vocabSize},
                                     {"layers", m_model->config().numLayers},
                                     {"tokenizer", m_codec.hasTokenizer()},
                                     {"device_map", map},
                                     {"resident_tensors", report.residentTensors},
                                     {"offloaded_tensors", report.offloadedTensors},
                                     {"zero_copy_tensors", report.zeroCopyTensors},
                                     {"adapted_layers", m_model->adaptedLayers().size()},
                                     {"quantization", quantizationJson(m_model->quantization())},
                                     {"decode_bound", decodeBoundJson(*m_model)}};
    if (dtypeChoice)
        loaded["dtype_choice"] = dtypeChoiceJson(*dtypeChoice);
    if (const auto &prompt = m_model->promptKernel())
        loaded["prompt_kernel"] = promptKernelJson(*prompt);
    if (request.pinThreads)
        loaded["pinned_cpus"] = pinnedCpus;
    emit(loaded);
}

void Session::generateRequest(const ServeRequest &request)
{
    const json &id = request.id;
    if (!m_model)
        return error(id, Error{ErrorCode::InvalidInput, "generate: no model loaded (send a load request first)", {}});
    std::vector<int64_t> ids = request.inputIds;
    if (request.prompt) {
        if (!m_codec.hasTokenizer())
            return error(id, Error{ErrorCode::InvalidInput,
                                   "generate: \"prompt\" needs the model's tokenizer.json; send \"input_ids\"",
                                   {}});
        auto encoded = m_codec.encodePrompt(*request.prompt, m_model->config(), request.sampling);
        if (!encoded)
            return error(id, encoded.error());
        ids = std::move(*encoded);
    }
    m_cancel = false;
    int64_t index = 0;
    auto result = generate(
        *m_model, {ids}, request.sampling,
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
    // The session lives for the whole process, never destroyed: the detached reader may still be
    // blocked on input when the process exits. It is built in static storage (no destructor runs at
    // exit) rather than on the heap through a pointer the compiler may drop, so what it holds stays
    // reachable to LeakSanitizer instead of being reported as a leak on every serve session.
    alignas(Session) static unsigned char storage[sizeof(Session)];
    static bool started = false;
    if (started)
        throw std::logic_error("runServe: one serve session per process");
    started = true;
    Session *session = new (storage) Session(in, out);
    return session->run();
}

} // namespace accel::inference
