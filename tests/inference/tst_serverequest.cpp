// accel-worker serve requests parsed without libtorch (core/inference/serverequest.h): the protocol's
// own examples, every field's type and range, unknown fields, ids echoed in errors, and the line
// reader's limit. The fuzz target tests/fuzz/fuzz_serverequest.cpp runs the same code.
#include "core/common/utf8.h"
#include "core/inference/serverequest.h"
#include "core/inference/workeroptions.h"

#include <QtTest>

#include <sstream>

using namespace accel;
using namespace accel::inference;

namespace {

QString refusal(const std::string &line)
{
    const ServeRequestResult request = parseServeRequest(line);
    return request ? QStringLiteral("<accepted>") : QString::fromStdString(request.error().error.toString());
}

} // namespace

class tst_ServeRequest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void protocolExamples();
    void fieldsOfTheWrongTypeNameTheField();
    void invalidUtf8IsAnsweredInValidUtf8();
    void floatBeyondIntegerRangeIsRefused();
    void unknownFieldsAndBothPromptsAreRefused();
    void errorsEchoTheId();
    void linesOverTheLimitAreSkipped();
    void commandLineIntegersOutOfRangeAreRefused();
};

void tst_ServeRequest::protocolExamples()
{
    auto load = parseServeRequest(R"({"op":"load","id":1,"model":"DIR","device_map":{"transformer.h.0":"disk","":0},)"
                                  R"("max_memory":"cpu=8GiB","offload_folder":"OFF","dtype":"bfloat16","threads":4,)"
                                  R"("adapter":"ADAPTER"})");
    QVERIFY2(load, load ? "" : load.error().error.message.c_str());
    QCOMPARE(int(load->op), int(ServeOp::Load));
    QCOMPARE(load->id, nlohmann::json(1));
    QCOMPARE(load->modelDir, std::string("DIR"));
    QCOMPARE(nlohmann::json::parse(load->load.deviceMap), nlohmann::json({{"transformer.h.0", "disk"}, {"", 0}}));
    QCOMPARE(load->load.maxMemory, std::string("cpu=8GiB"));
    QCOMPARE(load->load.dispatch.offloadFolder, std::string("OFF"));
    QCOMPARE(load->load.dispatch.computeDType, std::string("bfloat16"));
    QCOMPARE(load->load.threads, 4);
    QCOMPARE(load->load.adapterDir, std::string("ADAPTER"));
    QCOMPARE(parseServeRequest(R"({"op":"load","model":"DIR","device_map":"auto"})")->load.deviceMap,
             std::string("auto"));
    QVERIFY(!load->pinThreads);
    // accel generate's --dtype auto and --pin-threads.
    auto decode = parseServeRequest(R"({"op":"load","model":"DIR","dtype":"auto","pin_threads":true})");
    QVERIFY2(decode, decode ? "" : decode.error().error.message.c_str());
    QCOMPARE(decode->load.dispatch.computeDType, std::string("auto"));
    QVERIFY(decode->pinThreads);

    auto generate = parseServeRequest(
        R"({"op":"generate","id":"g1","prompt":"text","max_new_tokens":32.0,"greedy":true,"temperature":0.5,)"
        R"("top_k":40,"top_p":0.9,"repetition_penalty":1.1,"seed":18446744073709551615,"stop":["\n\n"],)"
        R"("stop_token_ids":[2,-1]})");
    QVERIFY2(generate, generate ? "" : generate.error().error.message.c_str());
    QCOMPARE(int(generate->op), int(ServeOp::Generate));
    QCOMPARE(generate->prompt.value_or("<none>"), std::string("text"));
    QVERIFY(generate->inputIds.empty());
    const SamplingOptions &s = generate->sampling;
    QCOMPARE(s.maxNewTokens, 32); // a whole number written with a fraction is still one
    QVERIFY(s.greedy);
    QCOMPARE(s.temperature, 0.5);
    QCOMPARE(s.topK, 40);
    QCOMPARE(s.topP, 0.9);
    QCOMPARE(s.repetitionPenalty, 1.1);
    QCOMPARE(s.seed, uint64_t(18446744073709551615ULL));
    QCOMPARE(s.stopStrings, std::vector<std::string>{"\n\n"});
    QCOMPARE(s.stopTokenIds, (std::vector<int64_t>{2, -1}));

    auto ids = parseServeRequest(R"({"op":"generate","input_ids":[5,6,9223372036854775807]})");
    QVERIFY(ids && !ids->prompt);
    QCOMPARE(ids->inputIds, (std::vector<int64_t>{5, 6, INT64_MAX}));
    QCOMPARE(ids->sampling.maxNewTokens, SamplingOptions().maxNewTokens); // defaults kept

    for (const auto &[line, op] : {std::pair{R"({"op":"cancel","id":"long"})", ServeOp::Cancel},
                                   std::pair{R"({"op":"unload","id":null})", ServeOp::Unload},
                                   std::pair{R"({"op":"shutdown"})", ServeOp::Shutdown}}) {
        auto request = parseServeRequest(line);
        QVERIFY2(request, line);
        QCOMPARE(int(request->op), int(op));
    }
}

void tst_ServeRequest::fieldsOfTheWrongTypeNameTheField()
{
    QCOMPARE(refusal(R"({"op":"load","id":"b","model":["x"]})"),
             QStringLiteral("load: \"model\": expected a string; got [\"x\"]"));
    QCOMPARE(refusal(R"({"op":"load"})"), QStringLiteral("load: \"model\" (a model folder) is required"));
    QCOMPARE(
        refusal(R"({"op":"load","model":"m","device_map":[1]})"),
        QStringLiteral("load: \"device_map\": expected \"auto\", \"cpu\" or an object of module -> device; got [1]"));
    QCOMPARE(refusal(R"({"op":"load","model":"m","threads":100000})"),
             QStringLiteral("load: \"threads\": expected an integer from 0 to 4096; got 100000"));
    QCOMPARE(refusal(R"({"op":"load","model":"m","pin_threads":"yes"})"),
             QStringLiteral("load: \"pin_threads\": expected true or false; got \"yes\""));
    QCOMPARE(refusal(R"({"op":"generate","greedy":1})"),
             QStringLiteral("generate: \"greedy\": expected true or false; got 1"));
    QCOMPARE(refusal(R"({"op":"generate","temperature":"hot"})"),
             QStringLiteral("generate: \"temperature\": expected a finite number; got \"hot\""));
    // A number beyond double's range is refused by the JSON parser itself (no infinity reaches a field).
    QCOMPARE(refusal(R"({"op":"generate","top_p":1e400})"),
             QStringLiteral("not a JSON line: not valid JSON: number overflow parsing '1e400'"));
    QCOMPARE(refusal(R"({"op":"generate","input_ids":[1,"2"]})"),
             QStringLiteral("generate: \"input_ids\": expected an array of integers (64-bit); got \"2\""));
    QCOMPARE(refusal(R"({"op":"generate","stop":"\n"})"),
             QStringLiteral("generate: \"stop\": expected an array of strings; got \"\\n\""));
    QCOMPARE(refusal(R"({"op":"generate","seed":-1})"),
             QStringLiteral("generate: \"seed\": expected an integer from 0 to 18446744073709551615; got -1"));
    QCOMPARE(refusal(R"({"op":5,"id":"a"})"),
             QStringLiteral("op: expected load, generate, cancel, unload or shutdown; got '5'"));
    QCOMPARE(refusal(R"({"id":"a"})"),
             QStringLiteral("op: expected load, generate, cancel, unload or shutdown; got ''"));
    QCOMPARE(refusal("[1,2]"), QStringLiteral("expected a JSON object such as {\"op\":\"load\",...}; got [1,2]"));
    QVERIFY(refusal("{").startsWith(QStringLiteral("not a JSON line: ")));
}

// Found by fuzz_serverequest after 7 executions: a byte that is not UTF-8 was quoted as it is in
// the "not a JSON line" message; writing that error event threw (nlohmann's type_error 316) in the
// worker's reader thread, which ended the worker.
void tst_ServeRequest::invalidUtf8IsAnsweredInValidUtf8()
{
    for (const std::string &line : {std::string("{\"op\":\"generate\",\"\xB5\xB5\":1}"), std::string("\xF6"),
                                    std::string("{\"op\":\"load\",\"model\":\"a\xC3\"}")}) {
        const ServeRequestResult refused = parseServeRequest(line);
        QVERIFY(!refused);
        const std::string &message = refused.error().error.message;
        QVERIFY2(message.rfind("not a JSON line: ", 0) == 0, message.c_str());
        QVERIFY2(utf8::isValid(message), message.c_str());
        QVERIFY2(message.find(utf8::kReplacement) != std::string::npos, message.c_str()); // the byte, shown as U+FFFD
        const nlohmann::json event{{"event", "error"}, {"message", message}};
        QVERIFY(!event.dump().empty()); // threw before
    }
}

// Found by fuzz_serverequest: nlohmann's get<int>() casts a double to int, undefined when the value
// is out of range ("max_new_tokens": 1e10 under UBSan: "1e+10 is outside the range of
// representable values of type 'int'").
void tst_ServeRequest::floatBeyondIntegerRangeIsRefused()
{
    QCOMPARE(refusal(R"({"op":"generate","max_new_tokens":1e10})"),
             QStringLiteral("generate: \"max_new_tokens\": expected an integer from -2147483648 to 2147483647; got "
                            "10000000000.0"));
    QCOMPARE(refusal(R"({"op":"generate","top_k":2.5})"),
             QStringLiteral("generate: \"top_k\": expected an integer from -2147483648 to 2147483647; got 2.5"));
    QCOMPARE(refusal(R"({"op":"generate","input_ids":[9.3e18]})"),
             QStringLiteral("generate: \"input_ids\": expected an array of integers (64-bit); got 9.3e+18"));
    QCOMPARE(refusal(R"({"op":"generate","stop_token_ids":[18446744073709551615]})"),
             QStringLiteral(
                 "generate: \"stop_token_ids\": expected an array of integers (64-bit); got 18446744073709551615"));
    QCOMPARE(refusal(R"({"op":"generate","seed":1.8446744073709552e19})"),
             QStringLiteral(
                 "generate: \"seed\": expected an integer from 0 to 18446744073709551615; got 1.8446744073709552e+19"));
    QCOMPARE(refusal(R"({"op":"load","model":"m","threads":-1e300})"),
             QStringLiteral("load: \"threads\": expected an integer from 0 to 4096; got -1e+300"));
    // The largest values that do fit are taken.
    auto edge = parseServeRequest(R"({"op":"generate","max_new_tokens":2147483647,"top_k":-2147483648.0,)"
                                  R"("input_ids":[-9223372036854775808],"seed":9.2e18})");
    QVERIFY2(edge, edge ? "" : edge.error().error.message.c_str());
    QCOMPARE(edge->sampling.maxNewTokens, INT_MAX);
    QCOMPARE(edge->sampling.topK, INT_MIN);
    QCOMPARE(edge->inputIds, std::vector<int64_t>{INT64_MIN});
    QCOMPARE(edge->sampling.seed, uint64_t(9200000000000000000ULL));
    auto chunked = parseServeRequest(R"({"op":"generate","input_ids":[1],"prefill_chunk":512})");
    QVERIFY(chunked);
    QCOMPARE(chunked->sampling.prefillChunk, 512);
    QVERIFY(!parseServeRequest(R"({"op":"generate","input_ids":[1],"prefill_chunk":-1})"));
}

void tst_ServeRequest::unknownFieldsAndBothPromptsAreRefused()
{
    QCOMPARE(refusal(R"({"op":"generate","input_ids":[1],"max_new_token":8})"),
             QStringLiteral("generate: unknown field \"max_new_token\"; the fields of generate are op, id, prompt, "
                            "input_ids, max_new_tokens, greedy, temperature, top_k, top_p, repetition_penalty, seed, "
                            "stop, stop_token_ids, prefill_chunk"));
    QCOMPARE(refusal(R"({"op":"unload","model":"m"})"),
             QStringLiteral("unload: unknown field \"model\"; the fields of unload are op, id"));
    QCOMPARE(refusal(R"({"op":"generate","prompt":"a","input_ids":[1]})"),
             QStringLiteral("generate: give \"prompt\" (text) or \"input_ids\" (token ids), not both"));
}

void tst_ServeRequest::errorsEchoTheId()
{
    auto refused = parseServeRequest(R"({"op":"generate","id":{"n":[1,"x"]},"top_k":"3"})");
    QVERIFY(!refused);
    QCOMPARE(refused.error().id, nlohmann::json::parse(R"({"n":[1,"x"]})"));
    QCOMPARE(refused.error().error.code, ErrorCode::InvalidInput);
    // Not an object, or not JSON: no id can be read.
    QVERIFY(parseServeRequest("[\"id\"]").error().id.is_null());
    QVERIFY(parseServeRequest("{\"id\":1,").error().id.is_null());
}

void tst_ServeRequest::linesOverTheLimitAreSkipped()
{
    std::istringstream in("{\"op\":\"cancel\"}\n" + std::string(20, 'x') + "\n\r\t \n{\"op\":\"shutdown\"}");
    std::string line;
    bool tooLong = false;
    QVERIFY(readServeRequestLine(in, line, tooLong, 18));
    QVERIFY(!tooLong);
    QCOMPARE(line, std::string("{\"op\":\"cancel\"}"));
    QVERIFY(readServeRequestLine(in, line, tooLong, 18));
    QVERIFY(tooLong);
    QCOMPARE(line.size(), size_t(18));
    QCOMPARE(QString::fromStdString(serveLineTooLong(18).error.message),
             QStringLiteral("request longer than 18 bytes; ignored"));
    QVERIFY(readServeRequestLine(in, line, tooLong, 18));
    QVERIFY(!tooLong && isBlankServeLine(line));
    QVERIFY(readServeRequestLine(in, line, tooLong, 18)); // the last line has no newline
    QCOMPARE(line, std::string("{\"op\":\"shutdown\"}"));
    QVERIFY(!readServeRequestLine(in, line, tooLong, 18));
}

// `accel-worker generate --max-new-tokens 4294967297` ran with 1 (a narrowing cast); the command
// line's integers now have the same ranges as the serve fields.
void tst_ServeRequest::commandLineIntegersOutOfRangeAreRefused()
{
    auto parse = [](std::vector<std::string> words) {
        words.insert(words.begin(), {"accel-worker", "generate", "/models/m"});
        std::vector<char *> argv;
        for (std::string &word : words)
            argv.push_back(word.data());
        return parseWorkerArguments(static_cast<int>(argv.size()), argv.data());
    };
    auto big = parse({"--max-new-tokens", "4294967297"});
    QVERIFY(!big);
    QCOMPARE(QString::fromStdString(big.error().message),
             QStringLiteral("--max-new-tokens: expected an integer from -2147483648 to 2147483647; got '4294967297'"));
    auto threads = parse({"--threads", "5000"});
    QVERIFY(!threads);
    QCOMPARE(QString::fromStdString(threads.error().message),
             QStringLiteral("--threads: expected an integer from 0 to 4096; got '5000'"));
    // Seeds as the serve protocol takes them: 0 .. 2^64-1, never wrapped (-1 used to become 2^64-1).
    for (const char *seed : {"-1", "18446744073709551616", "1.5", ""}) {
        auto bad = parse({"--seed", seed});
        QVERIFY2(!bad, seed);
        QCOMPARE(QString::fromStdString(bad.error().message),
                 QStringLiteral("--seed: expected an integer from 0 to 18446744073709551615; got '%1'").arg(seed));
    }
    auto biggestSeed = parse({"--seed", "18446744073709551615", "--input-ids", "1"});
    QVERIFY(biggestSeed);
    QCOMPARE(biggestSeed->sampling.seed, UINT64_MAX);
    auto fine = parse({"--max-new-tokens", "2147483647", "--top-k", "-5", "--threads", "4096", "--stop-token-id",
                       "9223372036854775807", "--input-ids", "1,2"});
    QVERIFY2(fine, fine ? "" : fine.error().message.c_str());
    QCOMPARE(fine->sampling.maxNewTokens, INT_MAX);
    QCOMPARE(fine->sampling.topK, -5);
    QCOMPARE(fine->load.threads, 4096);
    QCOMPARE(fine->sampling.stopTokenIds, std::vector<int64_t>{INT64_MAX});
    QCOMPARE(fine->inputIds, (std::vector<int64_t>{1, 2}));
}

QTEST_GUILESS_MAIN(tst_ServeRequest)
#include "tst_serverequest.moc"
