// The worker's inference commands as real child processes: infer writes the model's logits,
// generate streams and prints accel.generate JSON equal to the in-process generator, serve speaks
// the JSON-lines protocol (load, generate with token events, cancel mid-generation, unload), and a
// text prompt goes through the model's tokenizer.json (the hand-made gpt2-tiny fixture) both ways.
// Batch generation from a prompts file under the real accel launch with 3 processes writes every
// result in the file's order, equal to one process, and a bad line fails every process naming it.
// Pipeline-parallel generation over 2 processes (each loads only its layers) gives the tokens of
// one process, greedy and sampled; what it does not run is refused by name.
#include "tests/inference/tinymodels.h"

#include "core/bigmodel/safetensors.h"
#include "core/inference/decodebound.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/int8kernel.h"
#include "core/inference/kernelisa.h"
#include "core/inference/torchtensors.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/helpers/testsupport.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sched.h>

#include <algorithm>
#include <unistd.h>

using namespace accel;

class tst_InferenceWorker : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void inferWritesLogits();
    void generateJsonMatchesInProcess();
    void badInputsExitTwo();
    void serveProtocol();
    void serveCancelStopsGeneration();
    void textPromptIsTokenizedAndDecoded();
    void checkpointTruncatedUnderServeFailsNamingIt();
    void promptsFileSplitBetweenThreeProcesses();
    void pipelineGenerationEqualsOneProcess();
    void pipelineRefusesWhatItDoesNotRun();
    void dtypeAutoAndPinnedThreadsThroughAccelGenerate();
    void gpt2DtypeAutoTimesItsConv1D();
    void gpt2Bf16PromptAtOnceMatchesRowByRow();
    void quantizedAutoMapIsTheDeviceMapPlan();
    void int8DecodeKernelThroughAccelGenerate();
    void promptKernelThroughAccelGenerate();

private:
    QString worker() const { return test::binDir() + "/accel-worker"; }
    QTemporaryDir m_dir;
    test::TinyModel m_gpt2;
    test::TinyModel m_llama;
};

static QList<QJsonObject> jsonLines(const QString &text)
{
    QList<QJsonObject> out;
    for (const QString &line : text.split('\n', Qt::SkipEmptyParts))
        out.append(QJsonDocument::fromJson(line.toUtf8()).object());
    return out;
}

// The objects of a JSON-lines file.
static QList<QJsonObject> jsonlFile(const QString &path)
{
    QFile f(path);
    f.open(QIODevice::ReadOnly);
    return jsonLines(QString::fromUtf8(f.readAll()));
}

void tst_InferenceWorker::initTestCase()
{
    m_gpt2 = test::writeTinyModel(m_dir.filePath("gpt2").toStdString(), "gpt2", 31);
    m_llama = test::writeTinyModel(m_dir.filePath("llama").toStdString(), "llama", 32);
    QVERIFY2(QFile::exists(worker()), qPrintable(worker()));
}

void tst_InferenceWorker::inferWritesLogits()
{
    const QString out = m_dir.filePath("logits.safetensors");
    auto r = test::runProgram(worker(),
                              {"infer", QString::fromStdString(m_gpt2.dir), "--input-ids", "1,2,3,50,7", "--device-map",
                               R"({"transformer.h.1": "disk", "": "cpu"})", "--logits-out", out, "--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    auto json = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(json["schema"].toString(), QString("accel.infer"));
    QCOMPARE(json["version"].toInt(), 1);
    QCOMPARE(json["shape"].toArray(), QJsonArray({1, 5, 53}));
    auto file = bigmodel::SafetensorsFile::open(out.toStdString());
    QVERIFY(file);
    const auto *info = (*file)->find("logits");
    QVERIFY(info);
    auto logits =
        inference::viewBytes(info->data, info->byteSize(), info->dtype, info->shape, (*file)->mapping(), "logits");
    QVERIFY(logits);
    auto ids = at::tensor(std::vector<int64_t>{1, 2, 3, 50, 7}, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
    QVERIFY(at::allclose(*logits, test::referenceGpt2(m_gpt2, ids), 1e-4, 1e-4));
}

void tst_InferenceWorker::generateJsonMatchesInProcess()
{
    auto r = test::runProgram(worker(), {"generate", QString::fromStdString(m_llama.dir), "--input-ids", "4,8,15,16",
                                         "--max-new-tokens", "9", "--temperature", "0.8", "--top-k", "12", "--seed",
                                         "77", "--stop-token-id", "-1", "--threads", "1", "--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    auto json = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(json["schema"].toString(), QString("accel.generate"));
    QCOMPARE(json["stop_reason"].toString(), QString("length"));
    QVERIFY(json["stats"].toObject()["decode_tokens_per_second"].toDouble() > 0);

    auto model = inference::InferenceModel::load(m_llama.dir);
    QVERIFY(model);
    inference::SamplingOptions o;
    o.maxNewTokens = 9;
    o.temperature = 0.8;
    o.topK = 12;
    o.seed = 77;
    o.stopTokenIds = {-1};
    auto local = inference::generate(**model, {{4, 8, 15, 16}}, o);
    QVERIFY(local);
    QJsonArray expected;
    for (int64_t t : local->sequences[0].tokens)
        expected.append(qint64(t));
    QCOMPARE(json["tokens"].toArray(), expected);
    // The decode bound, as the serve worker's loaded event gives it: this model's bytes per token,
    // the bandwidth measured on the --threads decode ran on, their quotient.
    const QJsonObject bound = json["decode_bound"].toObject();
    const double bytes = double(inference::decodeBytes(**model).perToken);
    QVERIFY(bytes > 0);
    QCOMPARE(bound["weight_bytes_per_token"].toDouble(), bytes);
    QCOMPARE(bound["offloaded_bytes_per_token"].toDouble(), 0.0);
    const double bandwidth = bound["memory_bandwidth_bytes_per_s"].toDouble();
    QVERIFY2(bandwidth > 0, qPrintable(r.out));
    QCOMPARE(bound["memory_bandwidth_threads"].toInt(), 1);
    QVERIFY2(bound["memory_bandwidth_method"].toString().startsWith("read-only "), qPrintable(r.out));
    QCOMPARE(bound["tokens_per_s"].toDouble(), bandwidth / bytes);
}

void tst_InferenceWorker::badInputsExitTwo()
{
    auto noTokenizer =
        test::runProgram(worker(), {"generate", QString::fromStdString(m_gpt2.dir), "--prompt", "hello"});
    QCOMPARE(noTokenizer.exitCode, 2);
    QVERIFY2(noTokenizer.err.contains("tokenizer.json"), qPrintable(noTokenizer.err));
    auto badFlag = test::runProgram(worker(), {"infer", QString::fromStdString(m_gpt2.dir), "--bogus"});
    QCOMPARE(badFlag.exitCode, 2);
    QVERIFY(badFlag.err.contains("unknown option --bogus"));
    auto noModel =
        test::runProgram(worker(), {"infer", m_dir.filePath("nothing"), "--input-ids", "1", "--logits-out", "x"});
    QCOMPARE(noModel.exitCode, 2);
    QVERIFY(noModel.err.contains("config.json"));
}

void tst_InferenceWorker::serveProtocol()
{
    const QString dir = QString::fromStdString(m_gpt2.dir);
    const QByteArray input =
        QByteArray(R"({"op":"generate","id":"early","input_ids":[1]})") + "\n" + R"({"op":"load","id":"l1","model":")" +
        dir.toUtf8() + R"(","device_map":{"transformer.h.0":"disk","":"cpu"}})" + "\n" +
        R"({"op":"generate","id":"g1","input_ids":[5,6,7],"max_new_tokens":4,"greedy":true,"stop_token_ids":[-1]})" +
        "\n" + R"({"op":"unload","id":"u1"})" + "\n" + R"({"op":"shutdown"})" + "\n";
    auto r = test::runProgram(worker(), {"serve"}, 60000, input);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    auto events = jsonLines(r.out);
    QStringList kinds;
    for (const auto &e : events)
        kinds << e["event"].toString();
    QCOMPARE(kinds,
             QStringList({"ready", "error", "loaded", "token", "token", "token", "token", "done", "unloaded", "bye"}));
    QCOMPARE(events[0]["schema"].toString(), QString("accel.worker-protocol"));
    QCOMPARE(events[1]["id"].toString(), QString("early"));
    QVERIFY(events[1]["message"].toString().contains("no model loaded"));
    QCOMPARE(events[2]["model_type"].toString(), QString("gpt2"));
    QVERIFY(events[2]["offloaded_tensors"].toInt() > 0);
    QCOMPARE(events[7]["id"].toString(), QString("g1"));
    QCOMPARE(events[7]["stop_reason"].toString(), QString("length"));
    QCOMPARE(events[7]["tokens"].toArray().size(), 4);
    for (int i = 0; i < 4; ++i)
        QCOMPARE(events[3 + i]["token"].toInteger(), events[7]["tokens"].toArray()[i].toInteger());
}

void tst_InferenceWorker::serveCancelStopsGeneration()
{
    QProcess process;
    process.start(worker(), {"serve"});
    QVERIFY(process.waitForStarted());
    const QString dir = QString::fromStdString(m_llama.dir);
    process.write(R"({"op":"load","id":"l","model":")" + dir.toUtf8() + "\"}\n");
    process.write(R"({"op":"generate","id":"long","input_ids":[1,2],"max_new_tokens":1000000,"stop_token_ids":[-1]})"
                  "\n");
    QByteArray seen;
    while (!seen.contains("\"event\":\"token\"")) {
        QVERIFY2(process.waitForReadyRead(30000), seen.constData());
        seen += process.readAll();
    }
    process.write(R"({"op":"cancel","id":"long"})"
                  "\n");
    process.write(R"({"op":"shutdown"})"
                  "\n");
    QVERIFY(process.waitForFinished(30000));
    seen += process.readAll();
    auto events = jsonLines(QString::fromUtf8(seen));
    QVERIFY(!events.isEmpty());
    QJsonObject done;
    for (const auto &e : events)
        if (e["event"].toString() == "done")
            done = e;
    QCOMPARE(done["stop_reason"].toString(), QString("cancelled"));
    QVERIFY(done["tokens"].toArray().size() < 1000000);
    QCOMPARE(events.back()["event"].toString(), QString("bye"));
}

void tst_InferenceWorker::textPromptIsTokenizedAndDecoded()
{
    // A gpt2 checkpoint whose vocabulary is the 269 ids of tests/data/tokenizers/gpt2-tiny.json.
    const QString dir = m_dir.filePath("gpt2-text");
    test::writeTinyModel(dir.toStdString(), "gpt2", 33, at::kFloat, true, false, 269);
    QVERIFY(QFile::copy(test::dataPath("tokenizers/gpt2-tiny.json"), dir + "/tokenizer.json"));
    const QStringList args{"generate", dir,  "--prompt", "the lower", "--max-new-tokens", "24", "--temperature", "0.9",
                           "--top-k",  "40", "--seed",   "5",         "--stop-token-id",  "-1", "--threads",     "1"};
    auto r = test::runProgram(worker(), args + QStringList{"--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    auto json = QJsonDocument::fromJson(r.out.toUtf8()).object();
    // The fixture's known encoding: t, he, Ġlower.
    QCOMPARE(json["prompt_ids"].toArray(), QJsonArray({116, 256, 263}));
    const QJsonArray tokens = json["tokens"].toArray();
    QCOMPARE(tokens.size(), 24);

    // The same tokens as the in-process generator on those ids.
    auto model = inference::InferenceModel::load(dir.toStdString());
    QVERIFY(model);
    inference::SamplingOptions o;
    o.maxNewTokens = 24;
    o.temperature = 0.9;
    o.topK = 40;
    o.seed = 5;
    o.stopTokenIds = {-1};
    auto local = inference::generate(**model, {{116, 256, 263}}, o);
    QVERIFY(local);
    std::vector<int32_t> ids;
    QJsonArray expected;
    for (int64_t t : local->sequences[0].tokens) {
        expected.append(qint64(t));
        ids.push_back(static_cast<int32_t>(t));
    }
    QCOMPARE(tokens, expected);

    // The text is the tokenizer's decoding of the new tokens, and the streamed stdout adds up to it.
    auto tokenizer = tokenizer::Tokenizer::load(dir.toStdString() + "/tokenizer.json");
    QVERIFY(tokenizer);
    const QString decoded = QString::fromStdString(tokenizer->decode(ids, true));
    QCOMPARE(json["text"].toString(), decoded);
    auto streamed = test::runProgram(worker(), args);
    QVERIFY2(streamed.exitCode == 0, qPrintable(streamed.err));
    QCOMPARE(streamed.out, decoded + "\n");
}

// The served model's weights view its mapped safetensors file (zero-copy). Another process
// truncates the file while it is loaded: the next generation ends the worker with exit code 1 and
// an error naming the file, instead of a SIGBUS crash (core/bigmodel/mappedfile.h).
void tst_InferenceWorker::checkpointTruncatedUnderServeFailsNamingIt()
{
    const std::string dir = m_dir.filePath("shrinking").toStdString();
    test::writeTinyModel(dir, "gpt2", 33);
    QProcess serve;
    serve.start(worker(), {"serve"});
    QVERIFY(serve.waitForStarted(10000));
    serve.write(R"({"op":"load","id":"l1","model":")" + QByteArray::fromStdString(dir) + R"(","device_map":"cpu"})" +
                "\n");
    QByteArray out;
    QTRY_VERIFY_WITH_TIMEOUT((out += serve.readAllStandardOutput()).contains("\"event\":\"loaded\""), 30000);
    const QJsonObject loaded = jsonLines(QString::fromUtf8(out)).last();
    QVERIFY2(loaded["zero_copy_tensors"].toInt() > 0, qPrintable(QString::fromUtf8(out)));
    const std::string file = dir + "/model.safetensors";
    QVERIFY(::truncate(file.c_str(), 0) == 0);
    serve.write(R"({"op":"generate","id":"g1","input_ids":[5,6,7],"max_new_tokens":2,"greedy":true})"
                "\n");
    QVERIFY(serve.waitForFinished(30000));
    const QByteArray err = serve.readAllStandardError();
    QCOMPARE(serve.exitStatus(), QProcess::NormalExit); // not a crash by SIGBUS
    QCOMPARE(serve.exitCode(), 1);
    QVERIFY2(err.contains(QByteArray::fromStdString("error: " + file + ": the file shrank while mapped")),
             err.constData());
}

void tst_InferenceWorker::promptsFileSplitBetweenThreeProcesses()
{
    const QString accel = test::binDir() + "/accel";
    // 7 prompts over 3 processes: shares of 3, 2 and 2, the last two padded with their last prompt.
    QFile prompts(m_dir.filePath("prompts.jsonl"));
    QVERIFY(prompts.open(QIODevice::WriteOnly));
    const QList<QList<int>> ids{{4, 8}, {15}, {16, 23, 42}, {7, 7}, {9}, {30, 1, 2, 3}, {11}};
    for (const auto &p : ids) {
        QJsonArray a;
        for (int id : p)
            a.append(id);
        prompts.write(QJsonDocument(QJsonObject{{"input_ids", a}}).toJson(QJsonDocument::Compact) + "\n\n");
    }
    prompts.close();
    const QStringList generate{"generate",
                               QString::fromStdString(m_llama.dir),
                               "--prompts_file",
                               prompts.fileName(),
                               "--greedy",
                               "--max_new_tokens",
                               "6",
                               "--stop_token_id",
                               "-1",
                               "--threads",
                               "1"};
    const QString single = m_dir.filePath("single.jsonl"), split = m_dir.filePath("split.jsonl");
    auto one = test::runProgram(accel, generate + QStringList{"--output", single, "--json"});
    QVERIFY2(one.exitCode == 0, qPrintable(one.err));
    const QJsonObject oneSummary = QJsonDocument::fromJson(one.out.toUtf8()).object();
    QCOMPARE(oneSummary["prompts"].toInt(), 7);
    QCOMPARE(oneSummary["threads"].toInt(), 1); // --threads, not the Accelerator's threads per rank
    auto three = test::runProgram(accel,
                                  QStringList{"launch", "--cpu", "--num_processes", "3", "--no_python", accel} +
                                      generate + QStringList{"--output", split},
                                  120000);
    QVERIFY2(three.exitCode == 0, qPrintable(three.err + three.out));
    const auto a = jsonlFile(single), b = jsonlFile(split);
    QCOMPARE(a.size(), 7);
    QCOMPARE(b.size(), 7);
    const QList<int> processes{0, 0, 0, 1, 1, 2, 2};
    for (int i = 0; i < 7; ++i) {
        QCOMPARE(b[i]["index"].toInt(), i);
        QCOMPARE(b[i]["process"].toInt(), processes[i]);
        QCOMPARE(b[i]["tokens"].toArray().size(), 6);
        QCOMPARE(b[i]["tokens"], a[i]["tokens"]);
        QVERIFY(!b[i].contains("padding"));
    }

    QFile bad(m_dir.filePath("bad.jsonl"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{\"input_ids\": [1]}\n{\"input_ids\": [1, 999]}\n");
    bad.close();
    auto refused = test::runProgram(accel,
                                    QStringList{"launch", "--cpu", "--num_processes", "3", "--no_python", accel,
                                                "generate", QString::fromStdString(m_llama.dir), "--prompts_file",
                                                bad.fileName(), "--output", m_dir.filePath("bad-out.jsonl")},
                                    120000);
    QVERIFY(refused.exitCode != 0);
    QVERIFY2((refused.err + refused.out).contains(bad.fileName() + ":2: token id 999 is outside the vocabulary"),
             qPrintable(refused.err + refused.out));
    QVERIFY(!QFile::exists(m_dir.filePath("bad-out.jsonl")));
}

// The last rank's JSON object in accel launch's mirrored output ("[rank N] " before every line).
static QJsonObject rankJson(const QString &output, int rank)
{
    const QString prefix = QString("[rank %1] ").arg(rank);
    QString text;
    bool inside = false;
    for (const QString &line : output.split('\n')) {
        if (!line.startsWith(prefix))
            continue;
        const QString body = line.mid(prefix.size());
        inside = inside || body == "{";
        if (inside)
            text += body + "\n";
    }
    return QJsonDocument::fromJson(text.toUtf8()).object();
}

void tst_InferenceWorker::pipelineGenerationEqualsOneProcess()
{
    const QString accel = test::binDir() + "/accel";
    QFile prompts(m_dir.filePath("pipeline-prompts.jsonl"));
    QVERIFY(prompts.open(QIODevice::WriteOnly));
    const QList<QList<int>> ids{{4, 8}, {15}, {16, 23, 42}};
    for (const auto &p : ids) {
        QJsonArray a;
        for (int id : p)
            a.append(id);
        prompts.write(QJsonDocument(QJsonObject{{"input_ids", a}}).toJson(QJsonDocument::Compact) + "\n");
    }
    prompts.close();
    // Bytes of the weights whose names start with one of `prefixes` (float32 on disk and in memory).
    auto bytesOf = [](const test::TinyModel &m, const QStringList &prefixes) {
        qint64 total = 0;
        for (const auto &[name, tensor] : m.weights)
            for (const QString &p : prefixes)
                if (QString::fromStdString(name).startsWith(p)) {
                    total += qint64(tensor.numel()) * 4;
                    break;
                }
        return total;
    };
    struct Case {
        const test::TinyModel *model;
        QString name, deviceMap;
        QStringList sampling;
        QStringList first, last; // the weights each rank holds
    };
    const QList<Case> cases{
        {&m_gpt2,
         "gpt2",
         "pipeline",
         {"--greedy"},
         {"transformer.wte.", "transformer.wpe.", "transformer.h.0."},
         {"transformer.h.1.", "transformer.ln_f.", "transformer.wte."}},
        {&m_llama,
         "llama",
         R"({"model.embed_tokens": "rank:0", "model.layers.0": "rank:0", "model.layers.1": "rank:1", "model.norm": "rank:1"})",
         {"--temperature", "0.8", "--top_k", "12", "--seed", "77"},
         {"model.embed_tokens.", "model.layers.0."},
         {"model.layers.1.", "model.norm.", "model.embed_tokens."}},
    };
    for (const Case &c : cases) {
        const QStringList generate = QStringList{"generate",         QString::fromStdString(c.model->dir),
                                                 "--prompts_file",   prompts.fileName(),
                                                 "--max_new_tokens", "6",
                                                 "--stop_token_id",  "-1",
                                                 "--threads",        "1"} +
                                     c.sampling;
        const QString single = m_dir.filePath(c.name + "-one.jsonl"), split = m_dir.filePath(c.name + "-pipe.jsonl");
        auto one = test::runProgram(accel, generate + QStringList{"--output", single});
        QVERIFY2(one.exitCode == 0, qPrintable(one.err));
        auto two =
            test::runProgram(accel,
                             QStringList{"launch", "--cpu", "--num_processes", "2", "--no_python", accel} + generate +
                                 QStringList{"--device_map", c.deviceMap, "--output", split, "--json"},
                             120000);
        QVERIFY2(two.exitCode == 0, qPrintable(two.err + two.out));
        const auto a = jsonlFile(single), b = jsonlFile(split);
        QCOMPARE(a.size(), 3);
        QCOMPARE(b.size(), 3);
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(b[i]["index"].toInt(), i);
            QCOMPARE(b[i]["process"].toInt(), 1); // the last stage picks every token
            QCOMPARE(b[i]["tokens"].toArray().size(), 6);
            QCOMPARE(b[i]["tokens"], a[i]["tokens"]);
        }
        const QJsonObject summary = rankJson(two.out, 1);
        QCOMPARE(summary["schema"].toString(), QString("accel.generate-batch"));
        const QJsonObject pipeline = summary["pipeline"].toObject();
        QCOMPARE(pipeline["micro_batches"].toInt(), 2);
        if (c.name == "gpt2") // where the even split ran each part, as a map naming processes
            QCOMPARE(pipeline["device_map"].toObject(), QJsonObject({{"transformer.wte", "rank:0"},
                                                                     {"transformer.wpe", "rank:0"},
                                                                     {"transformer.h.0", "rank:0"},
                                                                     {"transformer.h.1", "rank:1"},
                                                                     {"transformer.ln_f", "rank:1"}}));
        const QJsonArray stages = pipeline["stages"].toArray();
        QCOMPARE(stages.size(), 2);
        QCOMPARE(stages[0].toObject()["layers"].toArray(), QJsonArray({0, 1}));
        QCOMPARE(stages[1].toObject()["layers"].toArray(), QJsonArray({1, 2}));
        const qint64 firstBytes = stages[0].toObject()["resident_bytes"].toInteger();
        const qint64 lastBytes = stages[1].toObject()["resident_bytes"].toInteger();
        qInfo("%s: bytes loaded per rank: %lld and %lld of %lld", qPrintable(c.name), firstBytes, lastBytes,
              bytesOf(*c.model, {""}));
        QCOMPARE(firstBytes, bytesOf(*c.model, c.first));
        QCOMPARE(lastBytes, bytesOf(*c.model, c.last));
    }
}

void tst_InferenceWorker::pipelineRefusesWhatItDoesNotRun()
{
    const QString model = QString::fromStdString(m_llama.dir);
    auto draft = test::runProgram(
        worker(), {"generate", model, "--input-ids", "1,2", "--device-map", "pipeline", "--draft", model, "--greedy"});
    QCOMPARE(draft.exitCode, 2);
    QVERIFY2(draft.err.contains("--draft (speculative decoding runs one model in one process): not with a pipeline "
                                "--device_map"),
             qPrintable(draft.err));
    auto outOfRange = test::runProgram(worker(), {"infer", model, "--input-ids", "1,2", "--logits-out",
                                                  m_dir.filePath("never.safetensors"), "--device-map",
                                                  R"({"model.layers.0": "rank:0", "model.layers.1": "rank:3"})"});
    QCOMPARE(outOfRange.exitCode, 2);
    QVERIFY2(outOfRange.err.contains("device map: model.layers.1: \"rank:3\": a pipeline map names a process of the "
                                     "launch, rank:0 to rank:0"),
             qPrintable(outOfRange.err));
}

// `accel generate DIR` of six greedy tokens after a 4-token prompt on 2 threads, --json: the
// arguments the --dtype auto tests run with and without their options.
static QStringList greedyGenerateJson(const std::string &dir)
{
    return {"generate",
            QString::fromStdString(dir),
            "--input_ids",
            "4,8,15,16",
            "--max_new_tokens",
            "6",
            "--greedy",
            "--threads",
            "2",
            "--json"};
}

// accel generate --dtype auto --pin_threads: the choice and its reason in --json (bfloat16 only
// where chooseDecodeDType measured it faster), each intra-op thread on its own CPU, and the same
// greedy tokens as the chosen dtype without pinning. accel infer has no auto.
void tst_InferenceWorker::dtypeAutoAndPinnedThreadsThroughAccelGenerate()
{
    const QString accel = test::binDir() + "/accel";
    const QStringList common = greedyGenerateJson(m_llama.dir);
    auto r = test::runProgram(accel, common + QStringList{"--dtype", "auto", "--pin_threads"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject json = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const QJsonObject choice = json["dtype_choice"].toObject();
    const QString dtype = choice["dtype"].toString();
    QVERIFY2(dtype == "float32" || dtype == "bfloat16", qPrintable(r.out));
    QVERIFY2(!choice["reason"].toString().isEmpty(), qPrintable(r.out));
    if (dtype == "bfloat16")
        QVERIFY(choice["float32_ms"].toDouble() >= 1.2 * choice["bfloat16_ms"].toDouble());
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    QCOMPARE(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    const QJsonArray cpus = json["pinned_cpus"].toArray();
    QCOMPARE(cpus.size(), 2);
    for (const QJsonValue &cpu : cpus)
        QVERIFY2(CPU_ISSET(cpu.toInt(), &allowed), qPrintable(r.out));
    if (CPU_COUNT(&allowed) >= 2)
        QVERIFY(cpus[0].toInt() != cpus[1].toInt());
    auto plain = test::runProgram(accel, common + QStringList{"--dtype", dtype});
    QVERIFY2(plain.exitCode == 0, qPrintable(plain.err));
    const QJsonObject reference = QJsonDocument::fromJson(plain.out.toUtf8()).object();
    QCOMPARE(json["tokens"].toArray(), reference["tokens"].toArray());
    QVERIFY(!reference.contains("dtype_choice") && !reference.contains("pinned_cpus"));
    auto infer = test::runProgram(accel, {"infer", QString::fromStdString(m_llama.dir), "--input_ids", "4,8",
                                          "--logits_out", m_dir.filePath("auto.safetensors"), "--dtype", "auto"});
    QCOMPARE(infer.exitCode, 2);
    // A prompts file takes both as well (before, --pin_threads was dropped without a word and --dtype
    // auto was refused as an unknown dtype): the choice and the CPUs are said on stderr, stdout being
    // the batch's JSON, and the tokens are the chosen dtype's.
    QFile prompts(m_dir.filePath("auto-prompts.jsonl"));
    QVERIFY(prompts.open(QIODevice::WriteOnly));
    prompts.write("{\"input_ids\": [4, 8, 15, 16]}\n");
    prompts.close();
    const QString output = m_dir.filePath("auto-out.jsonl");
    auto batch = test::runProgram(accel, {"generate", QString::fromStdString(m_llama.dir), "--prompts_file",
                                          prompts.fileName(), "--output", output, "--max_new_tokens", "6", "--greedy",
                                          "--threads", "2", "--dtype", "auto", "--pin_threads"});
    QVERIFY2(batch.exitCode == 0, qPrintable(batch.err));
    // The choice is measured again in this process, so on a loaded machine it may differ from the
    // first run's: the tokens are those of the dtype this run names.
    const auto said = QRegularExpression(R"(\[--dtype auto: (float32|bfloat16): )").match(batch.err);
    QVERIFY2(said.hasMatch(), qPrintable(batch.err));
    QJsonArray expected = reference["tokens"].toArray();
    if (said.captured(1) != dtype) {
        auto other = test::runProgram(accel, common + QStringList{"--dtype", said.captured(1)});
        QVERIFY2(other.exitCode == 0, qPrintable(other.err));
        expected = QJsonDocument::fromJson(other.out.toUtf8()).object()["tokens"].toArray();
    }
    QVERIFY2(batch.err.contains("[--pin-threads: 2 intra-op threads on CPUs"), qPrintable(batch.err));
    const QList<QJsonObject> lines = jsonlFile(output);
    QCOMPARE(lines.size(), 1);
    QCOMPARE(lines[0]["tokens"].toArray(), expected);
}

// accel generate --dtype auto on a GPT-2 folder: on a CPU with bfloat16 instructions the choice times
// GPT-2's own product (a Conv1D, weight [in, out]) and names it; the tokens are those of the named
// dtype run on its own (bfloat16: the Conv1D column product in dot pairs where avx512_bf16 is).
void tst_InferenceWorker::gpt2DtypeAutoTimesItsConv1D()
{
    const QString accel = test::binDir() + "/accel";
    const QStringList common = greedyGenerateJson(m_gpt2.dir);
    auto r = test::runProgram(accel, common + QStringList{"--dtype", "auto"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject json = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const QJsonObject choice = json["dtype_choice"].toObject();
    const QString dtype = choice["dtype"].toString(), reason = choice["reason"].toString();
    if (inference::bf16GemmHere())
        QVERIFY2(reason.contains(QString("a 1 x %1 by %1 x %2 Conv1D (weight [in, out]) product (copies: ")
                                     .arg(m_gpt2.hidden)
                                     .arg(m_gpt2.inter)),
                 qPrintable(r.out));
    else
        QCOMPARE(dtype, QString("float32"));
    auto named = test::runProgram(accel, common + QStringList{"--dtype", dtype});
    QVERIFY2(named.exitCode == 0, qPrintable(named.err));
    QCOMPARE(json["tokens"].toArray(), QJsonDocument::fromJson(named.out.toUtf8()).object()["tokens"].toArray());
}

// accel generate --dtype bfloat16 on a GPT-2 folder: the 4-token prompt at once (where libtorch's
// bfloat16 GEMM has no instructions of its own, its Conv1D rows through the column kernel one after
// another; elsewhere libtorch's GEMM) gives the greedy tokens of the same prompt prefilled one token
// at a time (--prefill_chunk 1: every product one row, the decode step's kernels on every CPU).
void tst_InferenceWorker::gpt2Bf16PromptAtOnceMatchesRowByRow()
{
    const QString accel = test::binDir() + "/accel";
    const QStringList common = greedyGenerateJson(m_gpt2.dir) + QStringList{"--dtype", "bfloat16"};
    auto atOnce = test::runProgram(accel, common);
    QVERIFY2(atOnce.exitCode == 0, qPrintable(atOnce.err));
    auto rowByRow = test::runProgram(accel, common + QStringList{"--prefill_chunk", "1"});
    QVERIFY2(rowByRow.exitCode == 0, qPrintable(rowByRow.err));
    const QJsonArray tokens = QJsonDocument::fromJson(atOnce.out.toUtf8()).object()["tokens"].toArray();
    QCOMPARE(tokens.size(), 6);
    QCOMPARE(tokens, QJsonDocument::fromJson(rowByRow.out.toUtf8()).object()["tokens"].toArray());
}

// One sizing for the plan and the load: accel generate --device_map auto --quantization int8 runs
// the map accel device-map --quantization int8 plans for the same budgets (the quantized layers'
// bytes), and for some budget that map splits the model between the CPU and the disk.
void tst_InferenceWorker::quantizedAutoMapIsTheDeviceMapPlan()
{
    const QString accel = test::binDir() + "/accel";
    const QString model = QString::fromStdString(m_llama.dir);
    const qint64 stored = QFileInfo(model + "/model.safetensors").size();
    int split = 0;
    for (double share : {0.15, 0.3, 0.45, 0.6}) {
        const QString budget = QStringLiteral("cpu=%1,disk=1GB").arg(qint64(share * stored));
        auto planned =
            test::runProgram(accel, {"device-map", model, "--quantization", "int8", "--max_memory", budget, "--json"});
        QVERIFY2(planned.exitCode == 0, qPrintable(planned.err));
        const QJsonObject plan = QJsonDocument::fromJson(planned.out.toUtf8()).object()["device_map"].toObject();
        auto ran = test::runProgram(accel, {"generate", model, "--device_map", "auto", "--quantization", "int8",
                                            "--max_memory", budget, "--offload_folder", m_dir.filePath("qoff"),
                                            "--input_ids", "4,8", "--max_new_tokens", "2", "--json"});
        QVERIFY2(ran.exitCode == 0, qPrintable(ran.err));
        const QJsonObject used = QJsonDocument::fromJson(ran.out.toUtf8()).object()["device_map"].toObject();
        QVERIFY2(used == plan, qPrintable(budget + ": " + planned.out + "\n" + ran.out));
        const QStringList devices = [&] {
            QStringList d;
            for (const QJsonValue &v : plan)
                d << v.toVariant().toString();
            return d;
        }();
        if (devices.contains("cpu") && devices.contains("disk"))
            ++split;
    }
    QVERIFY2(split > 0, "no budget split the model between the CPU and the disk");
}

// accel generate --quantization int8: the decode kernel chosen at load (ours or libtorch's
// _weight_int8pack_mm, by the CPU's flags and a measurement: int8kernel.h) and its reason in
// --json, and greedy tokens equal to those of each kernel in process, GPT-2 (Conv1D) and Llama.
void tst_InferenceWorker::int8DecodeKernelThroughAccelGenerate()
{
    const QString accel = test::binDir() + "/accel";
    const std::vector<int64_t> prompt{4, 8, 15, 16, 23, 42}; // 6 rows: the prefill takes the other path
    for (const test::TinyModel *tiny : {&m_gpt2, &m_llama}) {
        auto r = test::runProgram(accel, {"generate", QString::fromStdString(tiny->dir), "--quantization", "int8",
                                          "--input_ids", "4,8,15,16,23,42", "--max_new_tokens", "8", "--greedy",
                                          "--threads", "2", "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QJsonObject json = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const QJsonObject kernel = json["quantization"].toObject()["int8_kernel"].toObject();
        const QString name = kernel["kernel"].toString();
        QVERIFY2(
            QStringList({"ours-avx512", "ours-avx2", "ours-portable", "libtorch-_weight_int8pack_mm"}).contains(name),
            qPrintable(r.out));
        QCOMPARE(kernel["dtype"].toString(), QString("float32"));
        QVERIFY2(kernel["reason"].toString().contains("int8 layer(s)"), qPrintable(r.out));
        QVERIFY(kernel["ours_ms"].toDouble() > 0 && kernel["measured_bytes"].toDouble() > 0);
        const bool libtorchRuns = !kernel["libtorch_ms"].isNull();
        // libtorch's kernel only when it measured kMeasuredChoiceMargin times faster (int8kernel.h).
        QCOMPARE(name.startsWith("libtorch"),
                 libtorchRuns && kernel["libtorch_ms"].toDouble() * inference::kMeasuredChoiceMargin <=
                                     kernel["ours_ms"].toDouble());
        QJsonArray tokens = json["tokens"].toArray();
        QCOMPARE(tokens.size(), 8);

        inference::LoadOptions options;
        options.threads = 2;
        options.quantization.method = "int8";
        auto model = inference::InferenceModel::load(tiny->dir, options);
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        inference::SamplingOptions greedy;
        greedy.greedy = true;
        greedy.maxNewTokens = 8;
        for (auto kernelInUse : {inference::Int8Kernel::Ours, inference::Int8Kernel::Libtorch}) {
            if (kernelInUse == inference::Int8Kernel::Libtorch && !libtorchRuns)
                continue;
            inference::useInt8Kernel("float32", kernelInUse);
            auto local = inference::generate(**model, {prompt}, greedy);
            QVERIFY(local);
            QJsonArray mine;
            for (int64_t t : local->sequences[0].tokens)
                mine.append(qint64(t));
            QVERIFY2(mine == tokens, qPrintable(QString::fromStdString(tiny->dir) + ": " + r.out));
        }
    }
}

// accel generate on a float32 model says up to how many prompt rows our kernels take (promptkernel.h):
// in --json the row counts measured with both kernels' times and the rows the rule gives them, on
// stderr the reason.
void tst_InferenceWorker::promptKernelThroughAccelGenerate()
{
    const QString accel = test::binDir() + "/accel";
    const QStringList args{"generate",
                           QString::fromStdString(m_llama.dir),
                           "--input_ids",
                           "4,8,15,16,23,42",
                           "--max_new_tokens",
                           "2",
                           "--greedy",
                           "--threads",
                           "2"};
    auto r = test::runProgram(accel, args + QStringList{"--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject kernel = QJsonDocument::fromJson(r.out.toUtf8()).object()["prompt_kernel"].toObject();
    const QJsonArray rows = kernel["rows"].toArray();
    QVERIFY2(!rows.isEmpty() && rows.size() <= int(std::size(inference::kPromptRowsMeasured)), qPrintable(r.out));
    // The rule on the times it printed: ours up to the row count before libtorch's first clear win,
    // which is the last measured; every count measured when there was none.
    qint64 expected = 1;
    bool won = false;
    for (int i = 0; i < rows.size(); ++i) {
        const QJsonObject t = rows[i].toObject();
        QCOMPARE(t["rows"].toInteger(), qint64(inference::kPromptRowsMeasured[i]));
        QVERIFY2(t["ours_ms"].toDouble() > 0 && t["libtorch_ms"].toDouble() > 0, qPrintable(r.out));
        QVERIFY2(!won, qPrintable(r.out)); // nothing measured after the decisive count
        won = t["libtorch_ms"].toDouble() * inference::kMeasuredChoiceMargin <= t["ours_ms"].toDouble();
        if (!won)
            expected = t["rows"].toInteger();
    }
    QVERIFY2(won || rows.size() == int(std::size(inference::kPromptRowsMeasured)), qPrintable(r.out));
    QCOMPARE(kernel["our_kernel_most_rows"].toInteger(), expected);
    QVERIFY2(kernel["product"].toString().contains("Linear"), qPrintable(r.out)); // the Llama's own layer
    QVERIFY2(kernel["reason"].toString().contains(QStringLiteral("ours up to %1 row").arg(expected)),
             qPrintable(r.out));
    r = test::runProgram(accel, args);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("[prompt kernel: float32 products [rows] x "), qPrintable(r.err));
}

QTEST_GUILESS_MAIN(tst_InferenceWorker)
#include "tst_inferenceworker.moc"
