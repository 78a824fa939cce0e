// Loading tokenizer.json: every unsupported feature and malformed file is refused with an Error
// that names the file, the JSON path and what would be supported.
#include "fixtures.h"

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizerspec.h"

#include <chrono>
#include <fcntl.h>
#include <future>
#include <sys/stat.h>
#include <unistd.h>

using accel::ErrorCode;
using accel::tokenizer::Tokenizer;

namespace {

// A minimal valid BPE tokenizer.json with `extra` members added at the top level and `modelExtra`
// inside "model".
std::string minimal(const std::string &extra = {}, const std::string &modelExtra = {})
{
    return R"({"version": "1.0", )" + extra + (extra.empty() ? "" : ", ") +
           R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])" +
           (modelExtra.empty() ? "" : ", " + modelExtra) + "}}";
}

} // namespace

class tst_TokenizerLoad : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void minimalLoads();
    void unsupported_data();
    void unsupported();
    void invalid_data();
    void invalid();
    void errorNamesTheFile();
    void missingFile();
    void fifoInPlaceOfTokenizerJsonDoesNotBlock();
    void tokenizerJsonOverTheLimitIsRefused();
};

void tst_TokenizerLoad::minimalLoads()
{
    auto tokenizer = Tokenizer::fromJson(minimal());
    QVERIFY2(tokenizer.has_value(), tokenizer ? "" : tokenizer.error().toString().c_str());
    QCOMPARE(tokenizer->encode("abba", false), (std::vector<int32_t>{2, 1, 0}));
    // Without a decoder the tokens are shown separated by spaces.
    QCOMPARE(tokenizer->decode({2, 1, 0}), std::string("ab b a"));
    QCOMPARE(tokenizer->bosId(), -1);
    QCOMPARE(tokenizer->eosId(), -1);
    // "merges" in the pair form and a missing model.type with merges (read as BPE) also load.
    QVERIFY(Tokenizer::fromJson(R"({"model": {"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}})"));
}

void tst_TokenizerLoad::unsupported_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("Unigram") << R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})"
                             << "model.type: Unigram is not supported (supported: BPE)";
    QTest::newRow("WordPiece") << R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})"
                               << "model.type: WordPiece is not supported (supported: BPE)";
    QTest::newRow("WordLevel") << R"({"model": {"type": "WordLevel", "vocab": {"a": 0}}})"
                               << "model.type: WordLevel is not supported (supported: BPE)";
    QTest::newRow("NFC") << QString::fromStdString(minimal(R"("normalizer": {"type": "NFC"})"))
                         << "normalizer.type: NFC is not supported (supported: Prepend, Replace, Sequence)";
    QTest::newRow("nested Lowercase")
        << QString::fromStdString(minimal(
               R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "_"}, {"type": "Lowercase"}]})"))
        << "normalizer.normalizers[1].type: Lowercase is not supported (supported: Prepend, Replace, Sequence)";
    QTest::newRow("BertPreTokenizer")
        << QString::fromStdString(minimal(R"("pre_tokenizer": {"type": "BertPreTokenizer"})"))
        << "pre_tokenizer.type: BertPreTokenizer is not supported (supported: ByteLevel, Metaspace, Split, Digits, "
           "Whitespace, WhitespaceSplit, Punctuation, Sequence)";
    QTest::newRow("nested UnicodeScripts")
        << QString::fromStdString(minimal(
               R"("pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "UnicodeScripts"}]})"))
        << "pre_tokenizer.pretokenizers[1].type: UnicodeScripts is not supported (supported: ByteLevel, Metaspace, "
           "Split, Digits, Whitespace, WhitespaceSplit, Punctuation, Sequence)";
    QTest::newRow("WordPiece decoder") << QString::fromStdString(
                                              minimal(R"("decoder": {"type": "WordPiece", "prefix": "##"})"))
                                       << "decoder.type: WordPiece is not supported (supported: ByteLevel, Metaspace, "
                                          "Replace, ByteFallback, Fuse, Strip, Sequence)";
    QTest::newRow("BertProcessing")
        << QString::fromStdString(
               minimal(R"("post_processor": {"type": "BertProcessing", "sep": ["a", 0], "cls": ["b", 1]})"))
        << "post_processor.type: BertProcessing is not supported (supported: TemplateProcessing, RobertaProcessing, "
           "ByteLevel, Sequence)";
    QTest::newRow("dropout") << QString::fromStdString(minimal({}, R"("dropout": 0.1)"))
                             << "model.dropout: 0.100000 is not supported (supported: null or 0)";
    QTest::newRow("subword prefix") << QString::fromStdString(minimal({}, R"("continuing_subword_prefix": "##")"))
                                    << "model.continuing_subword_prefix: \"##\" is not supported (supported: null)";
}

void tst_TokenizerLoad::unsupported()
{
    QFETCH(QString, json);
    QFETCH(QString, message);
    auto tokenizer = Tokenizer::fromJson(json.toStdString(), "tokenizer.json");
    QVERIFY(!tokenizer);
    QCOMPARE(tokenizer.error().code, ErrorCode::Unsupported);
    QCOMPARE(QString::fromStdString(tokenizer.error().toString()), QStringLiteral("tokenizer.json: ") + message);
}

void tst_TokenizerLoad::invalid_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("truncated") << R"({"model": {"type": "BPE", )"
                               << "not valid JSON";
    QTest::newRow("not an object") << "[1, 2]"
                                   << "(root): expected an object, got array";
    QTest::newRow("no model") << R"({"version": "1.0"})"
                              << "model: missing or not an object";
    QTest::newRow("vocab id") << R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})"
                              << "model.vocab.a: expected an integer id from 0 to 16777216, got \"zero\"";
    QTest::newRow("huge id") << R"({"model": {"type": "BPE", "vocab": {"a": 3200000000}, "merges": []}})"
                             << "model.vocab.a: expected an integer id from 0 to 16777216, got 3200000000";
    QTest::newRow("added id") << QString::fromStdString(minimal(R"("added_tokens": [{"id": -1, "content": "<s>"}])"))
                              << "added_tokens[0].id: expected an id from 0 to 16777216, got -1";
    QTest::newRow("merge form") << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}})"
                                << "model.merges[0]: expected \"left right\" (two tokens and one space), got \"a\"";
    QTest::newRow("merge part") << R"({"model": {"type": "BPE", "vocab": {"a": 0, "az": 1}, "merges": [["a", "z"]]}})"
                                << "model.merges[0]: token \"z\" is not in model.vocab";
    QTest::newRow("merge result") << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})"
                                  << "model.merges[0]: merged token \"ab\" is not in model.vocab";
    QTest::newRow("unk token") << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}})"
                               << "model.unk_token: \"<unk>\" is not in model.vocab";
    QTest::newRow("added token")
        << QString::fromStdString(minimal(R"("added_tokens": [{"content": "<s>"}])"))
        << "added_tokens[0]: expected an object with an integer \"id\" and a string \"content\"";
    QTest::newRow("bad regex")
        << QString::fromStdString(minimal(
               R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated", "invert": false})"))
        << "pre_tokenizer.pattern: regular expression \"(a\" does not compile";
    QTest::newRow("bad replace regex")
        << QString::fromStdString(
               minimal(R"("normalizer": {"type": "Replace", "pattern": {"Regex": "[a"}, "content": ""})"))
        << "normalizer.pattern: regular expression \"[a\" does not compile";
    QTest::newRow("empty replace")
        << QString::fromStdString(
               minimal(R"("decoder": {"type": "Replace", "pattern": {"String": ""}, "content": "x"})"))
        << "decoder.pattern: empty String pattern";
    QTest::newRow("split behaviour")
        << QString::fromStdString(minimal(
               R"("pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Dropped", "invert": false})"))
        << "pre_tokenizer.behavior: expected one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous; "
           "got \"Dropped\"";
    QTest::newRow("template token")
        << QString::fromStdString(minimal(
               R"("post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}]})"))
        << "post_processor.single[0]: special token \"<s>\" is neither an added token nor in the vocabulary";
    // Regression: values nested 100,000 deep overflowed the stack while the error message was built.
    const std::string deep = std::string(100000, '[') + "0" + std::string(100000, ']');
    QTest::newRow("deep vocab") << QString::fromStdString(R"({"model": {"type": "BPE", "vocab": {"a": )" + deep +
                                                          R"(}, "merges": []}})")
                                << "JSON nested deeper than 64 levels";
    QTest::newRow("deep merges") << QString::fromStdString(
                                        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": )" + deep + "}}")
                                 << "JSON nested deeper than 64 levels";
    QTest::newRow("deep normalizer") << QString::fromStdString(minimal(R"("normalizer": )" + std::string(5000, '[') +
                                                                       std::string(5000, ']')))
                                     << "JSON nested deeper than 64 levels";
    // Regression (hardening round 3): eight chained Replace normalizers, each making one "a" sixteen,
    // turned an 11-character prompt into 1.84 GB and then aborted. The growth a chain can cause is
    // bounded at load (64 times); so is the number of steps (64).
    std::string chain;
    for (int i = 0; i < 8; ++i)
        chain += std::string(i ? ", " : "") + R"({"type": "Replace", "pattern": {"String": "a"}, "content": ")" +
                 std::string(16, 'a') + "\"}";
    QTest::newRow("normalizer growth")
        << QString::fromStdString(minimal(R"("normalizer": {"type": "Sequence", "normalizers": [)" + chain + "]}"))
        << "normalizer: its Replace steps can make a text 4294967296 times longer (the limit is 64)";
    QTest::newRow("regex normalizer growth")
        << QString::fromStdString(
               minimal(R"("normalizer": {"type": "Replace", "pattern": {"Regex": "a|b"}, "content": ")" +
                       std::string(65, 'x') + "\"}"))
        << "normalizer: its Replace steps can make a text 65 times longer (the limit is 64)";
    std::string decoders;
    for (int i = 0; i < 3; ++i)
        decoders += std::string(i ? ", " : "") + R"({"type": "Replace", "pattern": {"String": "ab"}, "content": ")" +
                    std::string(40, 'b') + "\"}";
    QTest::newRow("decoder growth") << QString::fromStdString(minimal(
                                           R"("decoder": {"type": "Sequence", "decoders": [)" + decoders + "]}"))
                                    << "decoder: its Replace steps can make a text 8000 times longer (the limit is 64)";
    std::string many;
    for (int i = 0; i < 65; ++i)
        many += std::string(i ? ", " : "") + R"({"type": "Replace", "pattern": {"String": "x"}, "content": "y"})";
    QTest::newRow("too many steps") << QString::fromStdString(minimal(
                                           R"("normalizer": {"type": "Sequence", "normalizers": [)" + many + "]}"))
                                    << "normalizer: 65 steps (the limit is 64)";
}

void tst_TokenizerLoad::invalid()
{
    QFETCH(QString, json);
    QFETCH(QString, message);
    auto tokenizer = Tokenizer::fromJson(json.toStdString(), "tokenizer.json");
    QVERIFY(!tokenizer);
    QCOMPARE(tokenizer.error().code, ErrorCode::InvalidInput);
    const QString actual = QString::fromStdString(tokenizer.error().toString());
    QVERIFY2(actual.startsWith(QStringLiteral("tokenizer.json: ") + message), qPrintable(actual));
}

void tst_TokenizerLoad::errorNamesTheFile()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"model": {"type": "Unigram", "vocab": []}})");
    file.close();
    // Loading the folder finds tokenizer.json inside it.
    auto tokenizer = Tokenizer::load(dir.path().toStdString());
    QVERIFY(!tokenizer);
    QCOMPARE(QString::fromStdString(tokenizer.error().toString()),
             path + QStringLiteral(": model.type: Unigram is not supported (supported: BPE)"));
}

void tst_TokenizerLoad::missingFile()
{
    QTemporaryDir dir;
    auto tokenizer = Tokenizer::load(dir.filePath(QStringLiteral("nope.json")).toStdString());
    QVERIFY(!tokenizer);
    QCOMPARE(tokenizer.error().code, ErrorCode::NotFound);
    QVERIFY(QString::fromStdString(tokenizer.error().toString()).contains(QStringLiteral("nope.json")));
    auto folder = Tokenizer::load(dir.path().toStdString()); // a folder without tokenizer.json
    QVERIFY(!folder);
    QCOMPARE(folder.error().code, ErrorCode::NotFound);
}

void tst_TokenizerLoad::fifoInPlaceOfTokenizerJsonDoesNotBlock()
{
    QTemporaryDir dir;
    const std::string fifo = dir.filePath(QStringLiteral("tokenizer.json")).toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    auto loading = std::async(std::launch::async, [&] { return Tokenizer::load(dir.path().toStdString()); });
    if (loading.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK); // releases the blocked reader
        if (writer >= 0)
            ::close(writer);
        QFAIL("Tokenizer::load blocked on a FIFO");
    }
    auto tokenizer = loading.get();
    QVERIFY(!tokenizer);
    QCOMPARE(tokenizer.error().toString(), fifo + ": is a FIFO (named pipe), expected a regular file");
}

void tst_TokenizerLoad::tokenizerJsonOverTheLimitIsRefused()
{
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("tokenizer.json")).toStdString();
    const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
    QVERIFY(fd >= 0);
    QCOMPARE(::ftruncate(fd, off_t(accel::tokenizer::kMaxTokenizerJsonBytes) + 1), 0); // sparse
    ::close(fd);
    auto tokenizer = Tokenizer::load(path);
    QVERIFY(!tokenizer);
    QCOMPARE(tokenizer.error().code, ErrorCode::InvalidInput);
    QCOMPARE(tokenizer.error().toString(),
             path + ": file too large: 134217729 bytes (the limit for this file is 134217728 bytes)");
}

QTEST_GUILESS_MAIN(tst_TokenizerLoad)
#include "tst_tokenizerload.moc"
