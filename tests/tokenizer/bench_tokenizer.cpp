// Throughput of encode and decode on a long prompt (label "bench": not part of CI). Prints MB/s.
#include "fixtures.h"

#include <QElapsedTimer>

#include <cstdio>

class bench_Tokenizer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void throughput();
};

void bench_Tokenizer::throughput()
{
    std::string text;
    for (int i = 0; text.size() < 1000000; ++i)
        text += "the lower café 日本 emoji 😀 number " + std::to_string(i) + (i % 11 == 0 ? "\n\n" : " ");
    std::printf("%-22s %10s %12s %12s %12s\n", "fixture", "tokens", "encode MB/s", "cached MB/s", "decode MB/s");
    for (const char *name : {"gpt2-tiny.json", "gpt2-split.json", "llama-tiny.json", "llama-metaspace.json"}) {
        const auto tokenizer = accel::test::loadFixture(name);
        QElapsedTimer timer;
        timer.start();
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
        std::printf("%-22s %10zu %12.1f %12.1f %12.1f\n", name, ids.size(), mb / first, mb / second, mb / decode);
    }
}

QTEST_GUILESS_MAIN(bench_Tokenizer)
#include "bench_tokenizer.moc"
