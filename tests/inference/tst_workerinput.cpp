// Hostile input to accel-worker as a real child process: serve requests nested 100,000 deep, with
// fields of the wrong type or longer than the request limit are answered with error events and
// the worker keeps serving; --device-map nested deep, config.json layer counts beyond the limits or
// the checkpoint, and checkpoint_<n> folders beyond int range exit 2 with a message naming what was
// wrong. `accel generate --draft` (the user's command, through accel to the worker) gives the
// tokens of plain greedy decoding and says how many proposals were kept; a draft without --greedy
// or with another vocabulary exits 2 naming it.
#include "tests/inference/tinymodels.h"

#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;

class tst_WorkerInput : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void serveSurvivesHostileRequests();
    void deeplyNestedDeviceMapExitsTwo();
    void deviceMapIndexOutOfRangeIsRefused();
    void configLayerCountsAreBounded();
    void checkpointFolderNumbersDoNotAbortTheWorker();
    void negativeCheckpointStepIsRefused();
    void longPromptIsRefusedBeforeItIsTokenized();
    void draftOnTheCommandLine();

private:
    QString worker() const { return test::binDir() + "/accel-worker"; }
    QTemporaryDir m_dir;
    test::TinyModel m_gpt2;
};

void tst_WorkerInput::initTestCase()
{
    m_gpt2 = test::writeTinyModel(m_dir.filePath("gpt2").toStdString(), "gpt2", 41);
    QVERIFY2(QFile::exists(worker()), qPrintable(worker()));
}

void tst_WorkerInput::serveSurvivesHostileRequests()
{
    const QByteArray deep = QByteArray(100000, '[') + QByteArray(100000, ']');
    QByteArray input;
    input += R"({"op":"unload","id":)" + deep + "}\n"; // overflowed the stack in dump()
    input += R"({"op":5,"id":"a"})"
             "\n"; // json::value threw: abort
    input += R"({"op":"load","id":"b","model":["x"]})"
             "\n";                                   // same
    input += QByteArray((64 << 20) + 1, ' ') + "\n"; // over the request limit
    input += R"({"op":"load","id":"c","model":")" + QByteArray::fromStdString(m_gpt2.dir) +
             R"(","device_map":{"transformer.h.0":[1]}})"
             "\n";
    input += R"({"op":"unload","id":"d"})"
             "\n";
    input += R"({"op":"shutdown"})"
             "\n";
    const auto r = test::runProgram(worker(), {"serve"}, 120000, input);
    QVERIFY2(r.exitCode == 0 && !r.crashed, qPrintable(r.err));
    QList<QJsonObject> events;
    for (const QString &line : r.out.split('\n', Qt::SkipEmptyParts))
        events.append(QJsonDocument::fromJson(line.toUtf8()).object());
    // Unparsable lines are answered by the reader thread, the others in order by the main thread:
    // look errors up by id or message, not by position.
    QCOMPARE(events.size(), 8);
    QCOMPARE(events.first()["event"].toString(), QString("ready"));
    QCOMPARE(events.last()["event"].toString(), QString("bye"));
    QMap<QString, QString> errors; // id (or message for id-less ones) -> message
    int unloaded = 0;
    for (const auto &e : events) {
        if (e["event"].toString() == "error")
            errors.insert(e["id"].isString() ? e["id"].toString() : e["message"].toString(), e["message"].toString());
        unloaded += e["event"].toString() == "unloaded" && e["id"].toString() == "d";
    }
    QCOMPARE(unloaded, 1);
    QCOMPARE(errors.size(), 5);
    QVERIFY(errors.contains("not a JSON line: JSON nested deeper than 64 levels"));
    QVERIFY(errors.contains("request longer than 67108864 bytes; ignored"));
    QCOMPARE(errors.value("a"), QString("op: expected load, generate, cancel, unload or shutdown; got '5'"));
    QVERIFY2(errors.value("b").startsWith("load: "), qPrintable(errors.value("b")));
    QCOMPARE(errors.value("c"),
             QString("device map: transformer.h.0: expected \"cpu\", \"disk\" or a GPU index; got [1]"));
}

void tst_WorkerInput::deeplyNestedDeviceMapExitsTwo()
{
    // 50,000 levels: one argument may not exceed 128 KiB.
    const QString deep = QString(R"({"transformer.h.0":)") + QString(50000, '[') + QString(50000, ']') + "}";
    const auto r = test::runProgram(
        worker(), {"generate", QString::fromStdString(m_gpt2.dir), "--input-ids", "1", "--device-map", deep});
    QVERIFY2(!r.crashed, qPrintable(r.err));
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("device map: JSON nested deeper than 64 levels"), qPrintable(r.err));
}

// Regression (hardening round 3): `accel generate --device_map '{"": 99999999999999}'` aborted the
// worker (std::stoi threw, uncaught) and an index past 127 wrapped (c10::DeviceIndex is 8 bits: 300
// was GPU 44). Through the real CLI: a build with CUDA refuses the index by its range, one without
// says it has no CUDA; neither crashes.
void tst_WorkerInput::deviceMapIndexOutOfRangeIsRefused()
{
    for (const char *map : {R"({"": 99999999999999})", R"({"": 300})", R"({"": "99999999999999999999999"})"}) {
        const auto r = test::runAccel({"generate", QString::fromStdString(m_gpt2.dir), "--input_ids", "1",
                                       "--device_map", QString::fromLatin1(map)});
        QVERIFY2(!r.crashed, qPrintable(r.err));
        const bool range = r.err.contains("GPU indices go from 0 to 127");
        const bool noCuda = r.err.contains("this build of accel-worker has no CUDA");
        QVERIFY2(range || noCuda, qPrintable(r.err));
        QCOMPARE(r.exitCode, range ? 2 : 1);
    }
}

void tst_WorkerInput::configLayerCountsAreBounded()
{
    const QString config = QString::fromStdString(m_gpt2.dir) + "/config.json";
    QFile file(config);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray original = file.readAll();
    file.close();
    auto withLayers = [&](qint64 layers) {
        QJsonObject object = QJsonDocument::fromJson(original).object();
        object["n_layer"] = layers;
        QFile out(config);
        return out.open(QIODevice::WriteOnly) && out.write(QJsonDocument(object).toJson()) > 0;
    };
    // 2^31 layers aborted the worker (~7 KB allocated per declared layer before the checkpoint was read).
    QVERIFY(withLayers(2147483648LL));
    auto huge = test::runProgram(worker(), {"generate", QString::fromStdString(m_gpt2.dir), "--input-ids", "1"});
    QVERIFY2(!huge.crashed, qPrintable(huge.err));
    QCOMPARE(huge.exitCode, 2);
    QVERIFY2(huge.err.contains("n_layer: expected a positive integer up to 4096; got 2147483648"),
             qPrintable(huge.err));
    // Within the limits but more layers than the checkpoint holds: refused before the model is built.
    QVERIFY(withLayers(1000));
    auto more = test::runProgram(worker(), {"generate", QString::fromStdString(m_gpt2.dir), "--input-ids", "1"});
    QCOMPARE(more.exitCode, 2);
    QVERIFY2(more.err.contains("n_layer: 1000 layers declared but the checkpoint"), qPrintable(more.err));
    QVERIFY2(more.err.contains(QString("holds %1").arg(m_gpt2.layers)), qPrintable(more.err));
    QVERIFY(withLayers(m_gpt2.layers));
    auto fine = test::runProgram(
        worker(), {"generate", QString::fromStdString(m_gpt2.dir), "--input-ids", "1", "--max-new-tokens", "1"});
    QVERIFY2(fine.exitCode == 0, qPrintable(fine.err));
}

void tst_WorkerInput::checkpointFolderNumbersDoNotAbortTheWorker()
{
    // checkpoint_99999999999 made std::stoi throw (abort); checkpoint_2147483647 made the next save
    // checkpoint_-2147483648. Both are refused before the job starts.
    for (const char *name : {"checkpoint_99999999999", "checkpoint_2147483647"}) {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("out/checkpoints/") + QLatin1String(name)));
        QFile job(dir.filePath("job.yaml"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write("recipe: selftest\noutput_dir: out\ntraining:\n  timeout_s: 60\n");
        job.close();
        const auto r = test::runProgram(worker(), {dir.filePath("job.yaml")});
        QVERIFY2(!r.crashed, qPrintable(r.err));
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QLatin1String(name) + QStringLiteral(": checkpoint number beyond 2147483646")),
                 qPrintable(r.err));
    }
}

// Regression (hardening round 3): "last_step": -5 in a checkpoint's scheduler.json was taken, and
// the run "resumed from step -2". A one-layer gpt saves a checkpoint at its second step; with the
// step made negative the resume is refused, naming the file.
void tst_WorkerInput::negativeCheckpointStepIsRefused()
{
    QTemporaryDir dir;
    QFile corpus(dir.filePath("corpus.txt"));
    QVERIFY(corpus.open(QIODevice::WriteOnly));
    for (int i = 0; i < 100; ++i)
        corpus.write("the cat sat on the mat. ");
    corpus.close();
    const auto writeJob = [&](int steps) {
        QFile job(dir.filePath("job.yaml"));
        QVERIFY(job.open(QIODevice::WriteOnly));
        job.write("recipe: gpt\noutput_dir: out\nmodel: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16}\n"
                  "data: {corpus: corpus.txt}\nsample: {length: 0}\ntraining: {max_steps: " +
                  QByteArray::number(steps) + ", batch_size: 2, checkpoint_every: 2, log_every: 1, timeout_s: 60}\n");
    };
    writeJob(2);
    auto r = test::runProgram(worker(), {dir.filePath("job.yaml")});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QString scheduler = dir.filePath("out/checkpoints/checkpoint_0/scheduler.json");
    QFile file(scheduler);
    QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(scheduler));
    QVERIFY(file.readAll().contains("\"last_step\""));
    file.close();
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write("{\"last_step\": -5}\n");
    file.close();
    writeJob(4);
    r = test::runProgram(worker(), {dir.filePath("job.yaml")});
    QVERIFY2(!r.crashed, qPrintable(r.err));
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(scheduler + ": last_step=-5: expected a whole number from 0 to 9223372036854775807"),
             qPrintable(r.err));
    QVERIFY2(!r.out.contains("resumed from step"), qPrintable(r.out));
}

// Regression (hardening round 3): a 60 MB prompt was tokenized whole (52 M tokens, 13 s, 1.7 GB)
// before generate() compared it with the context. The prompt is now encoded against the limit
// (n_positions - max new tokens for gpt2) and refused as soon as it passes it: the message is the
// early one, not generate()'s, on the command line and in a serve session (4 MB here).
void tst_WorkerInput::longPromptIsRefusedBeforeItIsTokenized()
{
    const QString dir = m_dir.filePath("gpt2-text");
    test::writeTinyModel(dir.toStdString(), "gpt2", 33, at::kFloat, true, false, 269);
    QVERIFY(QFile::copy(test::dataPath("tokenizers/gpt2-tiny.json"), dir + "/tokenizer.json"));
    const QString expected = "prompt: more than 120 tokens; with max new tokens (8) it must fit n_positions 128";
    QString words;
    for (int i = 0; i < 2000; ++i)
        words += "the lower ";
    const auto cli = test::runProgram(worker(), {"generate", dir, "--prompt", words, "--max-new-tokens", "8"});
    QVERIFY2(!cli.crashed, qPrintable(cli.err));
    QCOMPARE(cli.exitCode, 2);
    QVERIFY2(cli.err.contains(expected), qPrintable(cli.err));
    QByteArray prompt;
    while (prompt.size() < (4 << 20))
        prompt += "the lower ";
    QByteArray input = R"({"op":"load","id":"l","model":")" + dir.toUtf8() + "\"}\n";
    input += R"({"op":"generate","id":"g","max_new_tokens":8,"prompt":")" + prompt + "\"}\n";
    input += "{\"op\":\"shutdown\"}\n";
    const auto served = test::runProgram(worker(), {"serve"}, 120000, input);
    QVERIFY2(served.exitCode == 0 && !served.crashed, qPrintable(served.err));
    bool refused = false;
    for (const QString &line : served.out.split('\n', Qt::SkipEmptyParts)) {
        const QJsonObject event = QJsonDocument::fromJson(line.toUtf8()).object();
        refused = refused || (event["event"].toString() == "error" && event["id"].toString() == "g" &&
                              event["message"].toString().contains(expected));
    }
    QVERIFY2(refused, qPrintable(served.out.right(2000)));
}

void tst_WorkerInput::draftOnTheCommandLine()
{
    const QString accel = test::binDir() + "/accel";
    const QString model = m_dir.filePath("llama-target"), draft = m_dir.filePath("llama-draft");
    test::writeTinyModel(model.toStdString(), "llama", 7);
    test::writeTinyModel(draft.toStdString(), "llama", 8);
    const QStringList common{"generate",         model, "--input_ids", "5,9,2", "--greedy",
                             "--max_new_tokens", "20",  "--threads",   "1",     "--json"};
    const auto plain = test::runProgram(accel, common);
    QVERIFY2(plain.exitCode == 0, qPrintable(plain.err));
    const auto fast = test::runProgram(accel, common + QStringList{"--draft", draft, "--draft_tokens", "3"});
    QVERIFY2(fast.exitCode == 0, qPrintable(fast.err));
    const QJsonObject a = QJsonDocument::fromJson(plain.out.toUtf8()).object();
    const QJsonObject b = QJsonDocument::fromJson(fast.out.toUtf8()).object();
    QCOMPARE(b["tokens"], a["tokens"]);
    QCOMPARE(a["stats"].toObject()["draft_proposed"].toInt(), 0);
    const int proposed = b["stats"].toObject()["draft_proposed"].toInt();
    QVERIFY2(proposed >= 19 / 4 && proposed <= 19 * 3, qPrintable(fast.out));
    QVERIFY(b["stats"].toObject()["draft_accepted"].toInt() <= proposed);

    const auto sampled = test::runProgram(accel, {"generate", model, "--input_ids", "5,9,2", "--draft", draft});
    QCOMPARE(sampled.exitCode, 2);
    QVERIFY2(sampled.err.contains("add --greedy"), qPrintable(sampled.err));
    const QString gpt2 = m_dir.filePath("gpt2"); // vocabulary 53 against the llama's 61
    const auto other = test::runProgram(accel, common + QStringList{"--draft", gpt2});
    QCOMPARE(other.exitCode, 2);
    QVERIFY2(other.err.contains("vocab_size 53 differs from the model's 61"), qPrintable(other.err));
    const auto zero = test::runProgram(accel, common + QStringList{"--draft", draft, "--draft_tokens", "0"});
    QCOMPARE(zero.exitCode, 2);
    QVERIFY2(zero.err.contains("expected an integer from 1 to 64"), qPrintable(zero.err));
}

QTEST_GUILESS_MAIN(tst_WorkerInput)
#include "tst_workerinput.moc"
