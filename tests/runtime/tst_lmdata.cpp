// The causal_lm recipe's data rules (core/worker/lmdata.h) on a hand-made tokenizer whose ids can
// be worked out by hand: blank-line-separated documents, EOS after each, windows of block_size
// with the last partial one dropped; .jsonl text fields; folders in path order; instruction
// examples with the loss mask (labels -100 on the prompt) against a hand-built reference, cut to
// block_size or left out; bad files refused naming the file and line; `accel preview-data` showing
// the same samples and counting steps per epoch.
#include "core/tokenizer/tokenizer.h"
#include "core/worker/lmdata.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace accel;
using Ids = std::vector<int32_t>;

namespace {

// <unk> 0, </s> 1, a 2, b 3, c 4, d 5, ab 6, cd 7; words split at whitespace.
const char *kTokenizer = R"({"version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false,
                    "normalized": false, "special": true}],
  "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": null, "decoder": null,
  "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": {"<unk>": 0, "</s>": 1, "a": 2, "b": 3, "c": 4, "d": 5, "ab": 6, "cd": 7},
            "merges": ["a b", "c d"]}})";
constexpr int32_t kEos = 1;
constexpr int32_t kIgnore = worker::kIgnoreLabel;

} // namespace

class tst_LmData : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    tokenizer::Tokenizer m_tokenizer;

    QString write(const QString &name, const QByteArray &content)
    {
        const QString path = m_dir.filePath(name);
        QDir().mkpath(QFileInfo(path).path());
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return {};
        file.write(content);
        return path;
    }

    Result<worker::LmData> load(const QString &path, int64_t block,
                                worker::LmDataFormat format = worker::LmDataFormat::Auto,
                                const std::string &key = "text")
    {
        worker::LmDataOptions options;
        options.blockSize = block;
        options.format = format;
        options.textKey = key;
        options.threads = 2;
        return worker::loadLmData(path.toStdString(), m_tokenizer, kEos, options);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        auto tokenizer = tokenizer::Tokenizer::fromJson(kTokenizer);
        QVERIFY2(tokenizer, tokenizer ? "" : tokenizer.error().toString().c_str());
        m_tokenizer = *tokenizer;
    }

    // Documents end at blank lines (spaces only count as blank); each gets EOS; windows of 3.
    void textDocumentsArePackedIntoWindows()
    {
        auto data = load(write("plain.txt", "ab c\r\ncd\n\n\n  \nd a\n\nabab"), 3);
        QVERIFY2(data, data ? "" : data.error().toString().c_str());
        QCOMPARE(data->format, worker::LmDataFormat::Text);
        QCOMPARE(data->documents, int64_t(3));
        QCOMPARE(data->tokens, int64_t(10)); // [ab c cd </s>] [d a </s>] [ab ab </s>]
        QCOMPARE(data->samples(), int64_t(3));
        QCOMPARE(data->ids(0), (Ids{6, 4, 7}));
        QCOMPARE(data->ids(1), (Ids{1, 5, 2}));
        QCOMPARE(data->ids(2), (Ids{1, 6, 6})); // the last partial window [</s>] is dropped
        QCOMPARE(data->labels(2), data->ids(2));
    }

    // .jsonl documents in data.text_key; blank lines skipped; a folder's files in path order.
    void jsonlAndFolders()
    {
        write("folder/b.txt", "cd\n");
        write("folder/a.jsonl", "{\"body\": \"ab\"}\n\n{\"body\": \"c d\", \"other\": 1}\n");
        write("folder/.hidden.csv", "ignored");
        auto data = load(m_dir.filePath("folder"), 2, worker::LmDataFormat::Auto, "body");
        QVERIFY2(data, data ? "" : data.error().toString().c_str());
        QCOMPARE(data->files, int64_t(2));
        QCOMPARE(data->documents, int64_t(3));
        QCOMPARE(data->packed, (Ids{6, 1, 4, 5, 1, 7})); // a.jsonl's two, then b.txt's; 7 tokens, 3 windows
    }

    // prompt + completion + EOS, labels -100 on the prompt: the hand-built reference.
    void instructionLossMask()
    {
        write("instruct.jsonl", "{\"prompt\": \"ab c\", \"completion\": \"d\"}\n"
                                "{\"prompt\": \"a\", \"completion\": \"cd cd ab\"}\n"
                                "{\"prompt\": \"ab ab ab ab ab\", \"completion\": \"c\"}\n"
                                "{\"prompt\": \"\", \"completion\": \"b\"}\n");
        auto data = load(m_dir.filePath("instruct.jsonl"), 4);
        QVERIFY2(data, data ? "" : data.error().toString().c_str());
        QCOMPARE(data->format, worker::LmDataFormat::Instruction);
        QCOMPARE(data->samples(), int64_t(3));
        QCOMPARE(data->ids(0), (Ids{6, 4, 5, kEos}));
        QCOMPARE(data->labels(0), (Ids{kIgnore, kIgnore, 5, kEos}));
        QCOMPARE(data->ids(1), (Ids{2, 7, 7, 6})); // cut to block_size 4: the EOS falls off
        QCOMPARE(data->labels(1), (Ids{kIgnore, 7, 7, 6}));
        QCOMPARE(data->ids(2), (Ids{3, kEos})); // an empty prompt: every token is predicted
        QCOMPARE(data->labels(2), (Ids{3, kEos}));
        QCOMPARE(data->cutExamples, int64_t(2));     // the second and the third
        QCOMPARE(data->droppedExamples, int64_t(1)); // the third: its prompt fills the block
    }

    void badDataIsNamed_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("format");
        QTest::addColumn<QString>("needle");
        QTest::newRow("invalid json") << "bad.jsonl" << QByteArray("{\"text\": \"ab\"}\n{\"text\": ab}\n")
                                      << int(worker::LmDataFormat::Auto) << "bad.jsonl: line 2";
        QTest::newRow("no text field") << "field.jsonl" << QByteArray("\n\n{\"body\": \"ab\"}\n")
                                       << int(worker::LmDataFormat::Text)
                                       << "field.jsonl: line 3: no string field \"text\"";
        QTest::newRow("not an object") << "array.jsonl" << QByteArray("[1, 2]\n") << int(worker::LmDataFormat::Auto)
                                       << "array.jsonl: line 1: expected a JSON object";
        QTest::newRow("no completion") << "half.jsonl"
                                       << QByteArray(
                                              "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\"}\n")
                                       << int(worker::LmDataFormat::Auto)
                                       << "half.jsonl: line 2: no string field \"completion\"";
        QTest::newRow("csv") << "table.csv" << QByteArray("a,b\n") << int(worker::LmDataFormat::Auto)
                             << "table.csv is neither a .txt file";
        QTest::newRow("txt as instruction") << "plain2.txt" << QByteArray("ab\n")
                                            << int(worker::LmDataFormat::Instruction) << "instruction data is .jsonl";
        QTest::newRow("too short") << "short.txt" << QByteArray("a\n") << int(worker::LmDataFormat::Auto)
                                   << "2 tokens, fewer than one window of data.block_size = 3";
        QTest::newRow("empty") << "empty.txt" << QByteArray("\n \n") << int(worker::LmDataFormat::Auto)
                               << "data.train: no document";
    }

    void badDataIsNamed()
    {
        QFETCH(QString, file);
        QFETCH(QByteArray, content);
        QFETCH(int, format);
        QFETCH(QString, needle);
        auto data = load(write(file, content), 3, worker::LmDataFormat(format));
        QVERIFY(!data);
        const QString message = QString::fromStdString(data.error().toString());
        QVERIFY2(message.contains(needle), qPrintable(message));
        QVERIFY2(message.contains("data.train"), qPrintable(message));
        QCOMPARE(exitCodeFor(data.error()), 2);
    }

    void missingPathIsNamed()
    {
        auto data = load(m_dir.filePath("nowhere.txt"), 3);
        QVERIFY(!data);
        QVERIFY(QString::fromStdString(data.error().toString()).contains("data.train: "));
        QVERIFY(QString::fromStdString(data.error().toString()).contains("nowhere.txt does not exist"));
    }

    // `accel preview-data JOB --json` reads the job's data as the worker does (the same library and
    // the model folder's tokenizer; EOS from config.json's eos_token_id when tokenizer_config.json
    // names none) and counts steps per epoch as the data loader deals batches: ceil(samples /
    // (batch x processes)) batches per rank, one step per accumulation of them.
    void previewDataShowsWhatTheWorkerReads()
    {
        if (!QFileInfo(accel::test::binDir() + "/accel").isExecutable())
            QSKIP("accel is not built");
        const QString model = m_dir.filePath("model");
        write("model/tokenizer.json", kTokenizer);
        write("model/config.json", "{\"model_type\": \"llama\", \"vocab_size\": 8, \"hidden_size\": 8, "
                                   "\"intermediate_size\": 16, \"num_hidden_layers\": 1, \"num_attention_heads\": 1, "
                                   "\"eos_token_id\": 1}");
        const QString text = write("preview.txt", "ab c\ncd\n\nd a\n\nabab\n\ncd cd a\n\nb b b\n\nc d ab\n");
        write("instruct2.jsonl", "{\"prompt\": \"ab c\", \"completion\": \"d\"}\n"
                                 "{\"prompt\": \"a\", \"completion\": \"cd cd ab\"}\n");
        auto job = [&](const QString &name, const QString &data, const QString &extra) {
            return write(name, ("recipe: causal_lm\nmodel: {path: model}\ndata: {train: " + data +
                                ", block_size: 3}\ntraining: {batch_size: 2, max_steps: 10" + extra + "}\n")
                                   .toUtf8());
        };
        const auto run = accel::test::runAccel(
            {"preview-data", job("text.yaml", "preview.txt", ""), "--num_processes", "2", "--samples", "2", "--json"});
        QVERIFY2(run.exitCode == 0, qPrintable(run.err));
        const QJsonObject answer = QJsonDocument::fromJson(run.out.toUtf8()).object();
        auto data = load(text, 3);
        QVERIFY(data);
        const QJsonObject train = answer["train"].toObject();
        QCOMPARE(answer["schema"].toString(), QString("accel.data-preview"));
        QCOMPARE(answer["eos_id"].toInt(), kEos);
        QCOMPARE(train["format"].toString(), QString("text"));
        QCOMPARE(train["tokens"].toInteger(), data->tokens);
        QCOMPARE(train["samples"].toInteger(), data->samples());
        QCOMPARE(data->samples(), int64_t(7));          // 22 tokens: 7 windows of 3
        QCOMPARE(answer["steps_per_epoch"].toInt(), 2); // 7 windows, batch 2 x 2 processes: 2 batches
        QCOMPARE(answer["epochs"].toDouble(), 5.0);
        const QJsonArray samples = answer["samples"].toArray();
        QCOMPARE(samples.size(), 2);
        QCOMPARE(samples[1].toObject()["text"].toString(), QString::fromStdString(m_tokenizer.decode(data->ids(1))));
        // Accumulation: 2 batches per rank and epoch, 4 per step: still one step, at the epoch's end.
        const auto accumulated = accel::test::runAccel(
            {"preview-data", job("accumulate.yaml", "preview.txt", ", gradient_accumulation_steps: 4"),
             "--num_processes", "2", "--json"});
        QCOMPARE(QJsonDocument::fromJson(accumulated.out.toUtf8()).object()["steps_per_epoch"].toInt(), 1);

        // Instruction examples: the prompt (no loss) apart from the completion.
        const auto instruct =
            accel::test::runAccel({"preview-data", job("instruct.yaml", "instruct2.jsonl", ""), "--json"});
        QVERIFY2(instruct.exitCode == 0, qPrintable(instruct.err));
        const QJsonObject first = QJsonDocument::fromJson(instruct.out.toUtf8()).object()["samples"][0].toObject();
        auto examples = load(m_dir.filePath("instruct2.jsonl"), 3);
        QVERIFY(examples);
        const Ids ids = examples->ids(0);
        const int32_t prompt = examples->promptLengths[0];
        QCOMPARE(first["masked_tokens"].toInt(), prompt);
        QCOMPARE(first["prompt"].toString(),
                 QString::fromStdString(m_tokenizer.decode(Ids(ids.begin(), ids.begin() + prompt))));
        QCOMPARE(first["completion"].toString(),
                 QString::fromStdString(m_tokenizer.decode(Ids(ids.begin() + prompt, ids.end()))));

        // Another recipe, or a model folder without its files: exit 2, naming what is wrong.
        const QString gpt = write("gpt.yaml", "recipe: gpt\ndata: {corpus: preview.txt}\n");
        const auto refused = accel::test::runAccel({"preview-data", gpt});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("preview-data reads causal_lm jobs; got \"gpt\""), qPrintable(refused.err));
        QDir().mkpath(m_dir.filePath("empty-model"));
        const QString noTokenizer =
            write("empty.yaml", "recipe: causal_lm\nmodel: {path: empty-model}\ndata: {train: preview.txt}\n");
        const auto missing = accel::test::runAccel({"preview-data", noTokenizer});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains("empty-model"), qPrintable(missing.err));
        QCOMPARE(accel::test::runAccel({"preview-data", "--help"}).exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(tst_LmData)
#include "tst_lmdata.moc"
