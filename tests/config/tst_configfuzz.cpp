// Mutation fuzzing over the corpus: truncations, byte flips, value type swaps and line edits.
// Whatever the input, the reader must not crash, must report failure exactly when it lists an
// error, and whatever it accepts must serialise to a fixed point (save -> load -> save gives the
// same bytes) in both formats.
#include "core/common/fileutil.h"
#include "core/config/configio.h"
#include "core/config/validation.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QRandomGenerator>
#include <QtTest>

using namespace accel;
using namespace accel::config;

namespace {

struct Corpus {
    QString name;
    std::string text;
    ConfigFormat format;
};

std::vector<Corpus> loadCorpus()
{
    std::vector<Corpus> files;
    QDir dir(test::dataPath(QStringLiteral("configs")));
    for (const QString &name :
         dir.entryList({QStringLiteral("*.yaml"), QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
        auto text = fileutil::readFile(dir.filePath(name).toStdString());
        if (text)
            files.push_back({name, *text, formatForPath(name.toStdString())});
    }
    return files;
}

std::vector<std::string> splitLines(const std::string &text)
{
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

std::string joinLines(const std::vector<std::string> &lines)
{
    std::string out;
    for (const std::string &line : lines)
        out += line + "\n";
    return out;
}

const char *const replacementValues[] = {
    "[]",
    "{}",
    "~",
    "''",
    "-1",
    "0",
    "99999999999999999999999",
    "1.5",
    "-.inf",
    ".nan",
    "true",
    "no",
    "'no'",
    "[1, [2]]",
    "{a: b}",
    "&anchor x",
    "*anchor",
    "!!int x",
    "!!str 5",
    "!custom x",
    "\"\\u00e9\\x85\\N\\_\"",
    "|\n  block text",
    ">-\n  folded",
    "\"tab\\there\"",
    "0x1F",
    "0o17",
    "1_000",
    "12:30:00",
    "2024-01-01",
    "=",
    "<<",
    "- item",
    "'it''s'",
    "\"\\t\"",
    "@",
    "`",
    "caf\xc3\xa9",
    "\xff\xfe",
    "a: b: c",
    "[a, b",
    "{a",
    "\"unterminated",
    "? complex\n: key",
    "1e5",
    "+12",
    "- - x",
};

} // namespace

class tst_ConfigFuzz : public QObject {
    Q_OBJECT
private:
    int m_cases = 0;
    int m_accepted = 0;

    void exercise(const std::string &text, ConfigFormat format, const char *what)
    {
        ++m_cases;
        QElapsedTimer timer;
        timer.start();
        struct Trace {
            QElapsedTimer &timer;
            const char *what;
            const std::string &text;
            ~Trace()
            {
                if (qEnvironmentVariableIsSet("ACCEL_FUZZ_TRACE") && timer.elapsed() > 50)
                    qInfo("slow case %s: %lld ms", what, timer.elapsed());
                if (qEnvironmentVariableIsSet("ACCEL_FUZZ_DUMP") &&
                    qEnvironmentVariable("ACCEL_FUZZ_DUMP") == QLatin1String(what)) {
                    QFile f(QStringLiteral("/tmp/fuzzcase.txt"));
                    if (f.open(QIODevice::WriteOnly))
                        f.write(text.data(), qint64(text.size()));
                }
            }
        } trace{timer, what, text};
        Diagnostics diagnostics;
        auto config = parseConfig(text, format, "fuzz.yaml", &diagnostics);
        if (!config) {
            QVERIFY2(!config.error().message.empty(), what);
            QVERIFY2(hasErrors(diagnostics), what);
            return;
        }
        QVERIFY2(!hasErrors(diagnostics), what);
        ++m_accepted;
        (void)validate(*config);
        for (ConfigFormat out : {ConfigFormat::Yaml, ConfigFormat::Json}) {
            const std::string first = serializeConfig(*config, out);
            auto again = parseConfig(first, out, "again", nullptr);
            if (!again) {
                qWarning().noquote() << "input:\n"
                                     << QString::fromStdString(text) << "\nserialised:\n"
                                     << QString::fromStdString(first);
                QFAIL(qPrintable(QStringLiteral("%1: serialised config does not load: %2")
                                     .arg(what, QString::fromStdString(again.error().toString()))));
            }
            const std::string second = serializeConfig(*again, out);
            if (first != second) {
                qWarning().noquote() << "first:\n"
                                     << QString::fromStdString(first) << "\nsecond:\n"
                                     << QString::fromStdString(second);
                QFAIL(qPrintable(QStringLiteral("%1: not a fixed point").arg(what)));
            }
        }
    }

private Q_SLOTS:
    void truncations()
    {
        for (const Corpus &file : loadCorpus()) {
            const size_t step = std::max<size_t>(1, file.text.size() / 40);
            for (size_t cut = 0; cut < file.text.size(); cut += step) {
                exercise(file.text.substr(0, cut), file.format,
                         qPrintable(file.name + QStringLiteral(" cut %1").arg(cut)));
                if (QTest::currentTestFailed())
                    return;
            }
        }
    }

    void byteFlips()
    {
        QRandomGenerator random(4242);
        const char interesting[] = ":- \n\t\"'[]{}#&*!|>%@,?\\0\x7f";
        for (const Corpus &file : loadCorpus()) {
            for (int i = 0; i < 40; ++i) {
                std::string text = file.text;
                const int flips = 1 + random.bounded(3);
                for (int f = 0; f < flips; ++f) {
                    const size_t at = random.bounded(quint32(text.size()));
                    text[at] = random.bounded(2) ? interesting[random.bounded(int(sizeof interesting - 1))]
                                                 : char(random.bounded(256));
                }
                exercise(text, file.format, qPrintable(file.name + QStringLiteral(" flip %1").arg(i)));
                if (QTest::currentTestFailed())
                    return;
            }
        }
    }

    void typeSwaps()
    {
        QRandomGenerator random(7);
        const int replacementCount = int(sizeof replacementValues / sizeof replacementValues[0]);
        for (const Corpus &file : loadCorpus()) {
            const std::vector<std::string> lines = splitLines(file.text);
            for (size_t l = 0; l < lines.size(); ++l) {
                const size_t colon = lines[l].find(": ");
                const size_t dash = lines[l].find("- ");
                if (colon == std::string::npos && dash == std::string::npos)
                    continue;
                for (int r = 0; r < 2; ++r) {
                    std::vector<std::string> edited = lines;
                    const std::string value = replacementValues[random.bounded(replacementCount)];
                    edited[l] = colon != std::string::npos ? lines[l].substr(0, colon + 2) + value
                                                           : lines[l].substr(0, dash + 2) + value;
                    exercise(joinLines(edited), file.format,
                             qPrintable(file.name + QStringLiteral(" swap line %1").arg(l)));
                    if (QTest::currentTestFailed())
                        return;
                }
            }
        }
    }

    void lineEdits()
    {
        QRandomGenerator random(99);
        for (const Corpus &file : loadCorpus()) {
            const std::vector<std::string> lines = splitLines(file.text);
            for (int i = 0; i < 20; ++i) {
                std::vector<std::string> edited = lines;
                const size_t at = random.bounded(quint32(edited.size()));
                switch (random.bounded(5)) {
                case 0:
                    edited.erase(edited.begin() + long(at));
                    break;
                case 1:
                    edited.insert(edited.begin() + long(at), edited[at]);
                    break;
                case 2:
                    edited[at] = "  " + edited[at];
                    break;
                case 3:
                    edited[at] = edited[at].substr(std::min<size_t>(2, edited[at].size()));
                    break;
                default:
                    std::swap(edited[at], edited[random.bounded(quint32(edited.size()))]);
                    break;
                }
                exercise(joinLines(edited), file.format, qPrintable(file.name + QStringLiteral(" edit %1").arg(i)));
                if (QTest::currentTestFailed())
                    return;
            }
        }
    }

    void hostileDocuments()
    {
        const std::string deep(20000, '[');
        const std::string deepMap = [] {
            std::string s;
            for (int i = 0; i < 3000; ++i)
                s += std::string(size_t(i), ' ') + "a:\n";
            return s;
        }();
        const std::string aliases =
            "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: &d [*c, *c, *c, *c]\n"
            "distributed_type: *d\n";
        for (const std::string &text :
             {deep, deepMap, aliases, std::string("\0\0\0", 3), std::string("---\na: 1\n---\nb: 2\n"),
              std::string("{\"distributed_type\": \"NO\", \"num_processes\": 1e400}"),
              std::string("%YAML 1.1\n---\ndistributed_type: NO\n"), std::string(100000, 'x')}) {
            exercise(text, ConfigFormat::Yaml, "hostile yaml");
            exercise(text, ConfigFormat::Json, "hostile json");
        }
    }

    void summary()
    {
        // Enough cases ran, and the mutations were mild enough that some still load.
        QVERIFY2(m_cases > 3000, qPrintable(QString::number(m_cases)));
        QVERIFY2(m_accepted > 300, qPrintable(QString::number(m_accepted)));
        qInfo("%d mutated documents, %d accepted", m_cases, m_accepted);
    }
};

QTEST_GUILESS_MAIN(tst_ConfigFuzz)
#include "tst_configfuzz.moc"
