// Throughput of load, encode and decode (label "bench": not part of CI). Prints a table.
// Besides the tiny fixtures it builds a GPT-2 sized file (50,000 merges over letters and "Ġ") in a
// temporary folder, to measure loading a realistic vocabulary.
#include "fixtures.h"

#include <QElapsedTimer>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <random>
#include <set>

namespace {

std::string byteChar(int b)
{
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    static int next = 256;
    static std::map<int, int> assigned;
    int cp = b;
    if (!printable) {
        if (!assigned.count(b))
            assigned[b] = next++;
        cp = assigned[b];
    }
    return QString(QChar(cp)).toStdString();
}

// A byte-level BPE file with `mergeCount` random merges among tokens made of letters and "Ġ".
QString writeLargeTokenizer(const QTemporaryDir &dir, int mergeCount)
{
    nlohmann::json vocab = nlohmann::json::object();
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) {
        const std::string c = byteChar(b);
        vocab[c] = b;
        if ((b >= 'a' && b <= 'z') || b == ' ')
            pieces.push_back(c);
    }
    std::mt19937 random(7);
    std::set<std::string> known;
    nlohmann::json merges = nlohmann::json::array();
    while (static_cast<int>(merges.size()) < mergeCount) {
        // Short pieces are picked more often, so the merges form common word fragments.
        auto pick = [&]() { return pieces[std::min(random() % pieces.size(), random() % pieces.size())]; };
        const std::string left = pick();
        const std::string right = pick();
        const std::string merged = left + right;
        if (merged.size() > 24 || known.count(merged) || right.rfind("Ġ", 0) == 0)
            continue;
        known.insert(merged);
        pieces.push_back(merged);
        vocab[merged] = 256 + static_cast<int>(merges.size());
        merges.push_back(left + " " + right);
    }
    const nlohmann::json root = {
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
    };
    const QString path = dir.filePath(QStringLiteral("large.json"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    file.write(QByteArray::fromStdString(root.dump()));
    return path;
}

} // namespace

class bench_Tokenizer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void throughput();
};

void bench_Tokenizer::throughput()
{
    std::string text;
    for (int i = 0; text.size() < 1000000; ++i)
        text += "the lower café 日本 emoji 😀 number " + std::to_string(i) + (i % 11 == 0 ? "\n\n" : " ");
    QTemporaryDir dir;
    QElapsedTimer generation;
    generation.start();
    const std::string large = writeLargeTokenizer(dir, 50000).toStdString();
    std::printf("generated the 50k-merge file in %.0f ms\n", generation.nsecsElapsed() / 1e6);
    std::printf("%-22s %8s %10s %12s %12s %12s\n", "tokenizer", "load ms", "tokens", "encode MB/s", "cached MB/s",
                "decode MB/s");
    for (const std::string &path :
         {accel::test::fixturePath("gpt2-tiny.json"), accel::test::fixturePath("gpt2-split.json"),
          accel::test::fixturePath("llama-tiny.json"), accel::test::fixturePath("llama-metaspace.json"), large}) {
        QElapsedTimer timer;
        timer.start();
        auto loaded = accel::tokenizer::Tokenizer::load(path);
        const double load = timer.nsecsElapsed() / 1e6;
        QVERIFY2(loaded.has_value(), loaded ? "" : loaded.error().toString().c_str());
        const accel::tokenizer::Tokenizer &tokenizer = *loaded;
        timer.restart();
        const auto ids = tokenizer.encode(text, false);
        const double first = timer.nsecsElapsed() / 1e9;
        timer.restart();
        const auto again = tokenizer.encode(text, false); // word cache warm
        const double second = timer.nsecsElapsed() / 1e9;
        timer.restart();
        const std::string decoded = tokenizer.decode(ids);
        const double decode = timer.nsecsElapsed() / 1e9;
        QVERIFY(decoded == text);
        QVERIFY(again == ids);
        const double mb = text.size() / 1e6;
        const std::string name = path == large ? "large (50k merges)" : path.substr(path.rfind('/') + 1);
        std::printf("%-22s %8.1f %10zu %12.1f %12.1f %12.1f\n", name.c_str(), load, ids.size(), mb / first, mb / second,
                    mb / decode);
    }
}

QTEST_GUILESS_MAIN(bench_Tokenizer)
#include "bench_tokenizer.moc"
