// The guards every reader of outside input goes through: fileutil::readFile / openRegularFile
// (regular files only, never blocking on a FIFO, a size cap), jsonutil::parseJson (size, nesting
// depth, duplicate keys) and yamlutil::parseYaml (size, nesting, aliases expanded), each failure an
// InvalidInput error naming the file; and a check of the sources that no parser is called around them.
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/common/yamldocument.h"
#include "tests/common/sourcelines.h"
#include "tests/helpers/testsupport.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <fcntl.h>
#include <future>
#include <sys/stat.h>
#include <unistd.h>

using namespace accel;

namespace {

std::string nestedArrays(size_t depth)
{
    return std::string(depth, '[') + std::string(depth, ']');
}

std::string nestedObjects(size_t depth)
{
    std::string text;
    for (size_t i = 0; i < depth; ++i)
        text += "{\"a\":";
    text += "1";
    return text + std::string(depth, '}');
}

} // namespace

class tst_InputGuards : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const char *name) const { return m_dir.filePath(QLatin1String(name)).toStdString(); }

private Q_SLOTS:
    void fifoInPlaceOfInputFileDoesNotBlock()
    {
        const std::string fifo = path("config.json");
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        // Read on another thread: if the reader ever blocks again, the test fails after the
        // deadline instead of hanging (a writer is opened to release it).
        auto reading = std::async(std::launch::async, [&] { return fileutil::readFile(fifo); });
        if (reading.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
            const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            if (writer >= 0)
                ::close(writer);
            QFAIL("readFile blocked on a FIFO");
        }
        const auto result = reading.get();
        QVERIFY(!result);
        QCOMPARE(result.error().code, ErrorCode::InvalidInput);
        QCOMPARE(result.error().toString(), fifo + ": is a FIFO (named pipe), expected a regular file");
        QVERIFY(!fileutil::openRegularFile(fifo));
    }

    void devicesAndFoldersAreNotInputFiles()
    {
        auto device = fileutil::readFile("/dev/zero"); // would never end
        QVERIFY(!device);
        QCOMPARE(device.error().toString(), std::string("/dev/zero: is a character device, expected a regular file"));
        auto folder = fileutil::readFile(m_dir.path().toStdString());
        QVERIFY(!folder);
        QCOMPARE(folder.error().code, ErrorCode::InvalidInput);
    }

    void fileOverTheLimitIsRefusedBeforeReading()
    {
        const std::string file = path("big.json");
        QVERIFY(fileutil::writeFileAtomic(file, std::string(1000, ' ')));
        auto refused = fileutil::readFile(file, 999);
        QVERIFY(!refused);
        QCOMPARE(refused.error().toString(),
                 file + ": file too large: 1000 bytes (the limit for this file is 999 bytes)");
        auto read = fileutil::readFile(file, 1000);
        QVERIFY(read);
        QCOMPARE(read->size(), size_t(1000));
        // A sparse 2 GiB file is refused by its size alone, without reading (or allocating) it.
        const std::string sparse = path("sparse.json");
        const int fd = ::open(sparse.c_str(), O_CREAT | O_WRONLY, 0600);
        QVERIFY(fd >= 0);
        QCOMPARE(::ftruncate(fd, off_t(2) << 30), 0);
        ::close(fd);
        auto huge = fileutil::readFile(sparse);
        QVERIFY(!huge);
        QCOMPARE(huge.error().message, std::string("file too large: 2147483648 bytes (the limit for this file is "
                                                   "1073741824 bytes)"));
    }

    void fileWithoutKnownSizeStopsAtTheLimit()
    {
        // /proc files report size 0; the cap still holds while reading.
        auto status = fileutil::readFile("/proc/self/status", 16);
        QVERIFY(!status);
        QCOMPARE(status.error().message, std::string("file too large: more than 16 bytes (the limit for this file is "
                                                     "16 bytes)"));
        QVERIFY(fileutil::readFile("/proc/self/status"));
    }

    void deeplyNestedJsonIsRefusedNotOverflowed()
    {
        for (const std::string &text : {nestedArrays(1000000), nestedObjects(200000)}) {
            auto parsed = jsonutil::parseJson(text, "deep.json");
            QVERIFY(!parsed);
            QCOMPARE(parsed.error().code, ErrorCode::InvalidInput);
            QCOMPARE(parsed.error().toString(), std::string("deep.json: JSON nested deeper than 64 levels"));
        }
        // The limit itself is allowed; one more level is not.
        QVERIFY(jsonutil::parseJson(nestedArrays(64), "x"));
        QVERIFY(!jsonutil::parseJson(nestedArrays(65), "x"));
        jsonutil::JsonLimits shallow;
        shallow.maxDepth = 2;
        shallow.subject = "header";
        auto refused = jsonutil::parseJson(R"({"a":{"b":[1]}})", "x", shallow);
        QVERIFY(!refused);
        QCOMPARE(refused.error().message, std::string("header nested deeper than 2 levels"));
    }

    void parsedDocumentMatchesTheText()
    {
        const std::string text =
            R"({"a":[1,-2,3.5,"s\u00e9",true,false,null,{"b":[]}],"c":{},"d":18446744073709551615})";
        auto parsed = jsonutil::parseJson(text, "x");
        QVERIFY(parsed);
        QCOMPARE(*parsed, nlohmann::json::parse(text));
        QCOMPARE(parsed->dump(), nlohmann::json::parse(text).dump());
        QVERIFY(jsonutil::parseJson("7", "x")->is_number_unsigned());
    }

    void duplicateKeysAreRefusedWhenAsked()
    {
        jsonutil::JsonLimits strict;
        strict.rejectDuplicateKeys = true;
        auto refused = jsonutil::parseJson(R"({"x":{"a":1,"b":2,"a":3}})", "i.json", strict);
        QVERIFY(!refused);
        QCOMPARE(refused.error().toString(), std::string("i.json: duplicate key \"a\""));
        // Without the option nlohmann's rule applies (the last value wins).
        QCOMPARE(jsonutil::parseJson(R"({"a":1,"a":3})", "x")->at("a"), nlohmann::json(3));
        // The same key in different objects is no duplicate.
        QVERIFY(jsonutil::parseJson(R"({"a":{"a":1},"b":{"a":2}})", "x", strict));
    }

    void syntaxAndSizeErrorsNameTheSource()
    {
        auto bad = jsonutil::parseJson(R"({"a": nope})", "c.json");
        QVERIFY(!bad);
        QCOMPARE(bad.error().toString(), std::string("c.json: not valid JSON: parse error at line 1, column 8: syntax "
                                                     "error while parsing value - invalid literal; last read: "
                                                     "'\"a\": no'"));
        QVERIFY(!jsonutil::parseJson("", "c.json"));
        QVERIFY(!jsonutil::parseJson("{} {}", "c.json"));
        jsonutil::JsonLimits small;
        small.maxBytes = 4;
        auto large = jsonutil::parseJson("[1,2,3]", "c.json", small);
        QVERIFY(!large);
        QCOMPARE(large.error().message, std::string("too large: 7 bytes (limit 4)"));
        const std::string file = path("c.json");
        QVERIFY(fileutil::writeFileAtomic(file, "[1,2,3]"));
        auto fromFile = jsonutil::readJsonFile(file, small);
        QVERIFY(!fromFile);
        QCOMPARE(fromFile.error().context, file);
    }

    void excerptIsShortAndWholeCharacters()
    {
        QCOMPARE(jsonutil::jsonExcerpt(nlohmann::json::parse("[1,2]")), std::string("[1,2]"));
        const nlohmann::json longText = std::string(300, 'x');
        QCOMPARE(jsonutil::jsonExcerpt(longText, 10), std::string("\"xxxxxxxxx..."));
        const nlohmann::json accents = "\xc3\xa9\xc3\xa9\xc3\xa9"; // "ééé"
        QCOMPARE(jsonutil::jsonExcerpt(accents, 4), std::string("\"\xc3\xa9..."));
    }

    void wideObjectParsesInOnePass()
    {
        // 200,000 keys: parsed in one linear pass (nlohmann's callback parser rescanned the object
        // at every nested closing brace, which took seconds at this size).
        std::string text = "{";
        for (int i = 0; i < 200000; ++i)
            text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":{\"v\":[" + std::to_string(i) + "]}";
        text += "}";
        jsonutil::JsonLimits strict;
        strict.rejectDuplicateKeys = true;
        strict.maxBytes = text.size();
        auto parsed = jsonutil::parseJson(text, "wide.json", strict);
        QVERIFY(parsed);
        QCOMPARE(parsed->size(), size_t(200000));
        QCOMPARE(parsed->at("k199999").at("v").at(0), nlohmann::json(199999));
    }

    // The YAML guard: what the config reader had (aliases, depth, size, one document, UTF-8), for
    // every YAML reader (job files were read without it: an alias bomb of 819 bytes took 2.2 GB).
    void yamlGuardBoundsTheExpandedDocument()
    {
        InputLimits limits;
        limits.subject = "a test file";
        auto refused = yamlutil::parseYaml(test::yamlAliasBomb(9).toStdString(), "bomb.yaml", limits);
        QVERIFY(!refused);
        QCOMPARE(refused.error().message, std::string("more than 100000 values once YAML aliases (*name) are expanded "
                                                      "(the limit for a test file)"));
        QVERIFY2(refused.error().context.rfind("bomb.yaml: line ", 0) == 0, refused.error().context.c_str());
        const std::string deep = "a: " + std::string(65, '[') + std::string(65, ']') + "\n";
        QCOMPARE(yamlutil::parseYaml(deep, "d.yaml", limits).error().message,
                 std::string("nested deeper than 64 levels (the limit for a test file)"));
        QVERIFY(yamlutil::parseYaml("a: " + std::string(63, '[') + std::string(63, ']') + "\n", "d.yaml", limits));
        limits.maxTextBytes = 1000;
        QCOMPARE(yamlutil::parseYaml("a: &t " + std::string(600, 'x') + "\nb: *t\n", "t.yaml", limits).error().message,
                 std::string("more than 1000 bytes of text once YAML aliases (*name) are expanded (the limit for a "
                             "test file)"));
        limits.maxBytes = 10;
        QCOMPARE(yamlutil::parseYaml("a: 12345678\n", "s.yaml", limits).error().toString(),
                 std::string("s.yaml: too large: 12 bytes (the limit for a test file is 10 bytes)"));
        QCOMPARE(yamlutil::parseYaml("a: 1\n---\nb: 2\n", "two.yaml", {}).error().message,
                 std::string("invalid YAML: the file holds 2 YAML documents (the second from line 2); expected one"));
        QVERIFY(yamlutil::parseYaml("", "empty.yaml", {})->IsNull());
        auto fifo = yamlutil::readYamlFile("/dev/zero", {});
        QCOMPARE(fifo.error().toString(), std::string("/dev/zero: is a character device, expected a regular file"));
    }

    // One entry point: no source file of the programs calls a JSON or YAML parser except the two
    // guards (jsondocument.cpp, yamldocument.cpp), so that a new reader cannot forget the limits.
    // The few exceptions parse text this process just wrote or its own probes printed; each is
    // listed with its reason. A new reader of a file, a message or an argument uses the guards.
    void everyParserGoesThroughTheGuard()
    {
        const QMap<QString, QString> exceptions{
            {QStringLiteral("core/common/jsondocument.cpp"), QStringLiteral("the JSON guard")},
            {QStringLiteral("core/common/yamldocument.cpp"), QStringLiteral("the YAML guard")},
            {QStringLiteral("app/cli/cmd_config_files.cpp"), QStringLiteral("the JSON serializeConfig just wrote")},
            {QStringLiteral("launcher/export/settingsfromconfig.cpp"),
             QStringLiteral("the JSON serializeConfig just wrote")},
            {QStringLiteral("core/hardware/softwareprobe.cpp"),
             QStringLiteral("the JSON lines of the probes it started itself (accel-worker --capabilities, Python)")},
            {QStringLiteral("core/hardware/envtext.cpp"),
             QStringLiteral("a config serializeConfig wrote after loading it through the guard (builds without "
                            "core/config read the file raw: 1 GiB limit, no depth limit)")},
            {QStringLiteral("core/rundir/runlayout.cpp"),
             QStringLiteral("one line of a supervisor record, non-throwing parse, never walked recursively")},
        };
        const QRegularExpression parser(
            QStringLiteral(R"((json::(parse|accept|sax_parse|from_cbor|from_msgpack|from_bson|from_ubjson)\s*\()|)"
                           R"((YAML::(Load|LoadFile|LoadAll|LoadAllFromFile)\s*\()|(YAML::Parser))"));
        QStringList bypasses;
        const int files = test::forEachSourceLine([&](const QString &relative, int line, const QString &text) {
            if (parser.match(text).hasMatch() && !exceptions.contains(relative))
                bypasses << QStringLiteral("%1:%2: %3").arg(relative).arg(line).arg(text.trimmed());
        });
        QVERIFY2(files > 100, qPrintable(QString::number(files)));
        QVERIFY2(bypasses.isEmpty(), qPrintable(QStringLiteral("parsers called around core/common's input guard "
                                                               "(use jsonutil::parseJson / parseOrderedJson / "
                                                               "yamlutil::parseYaml):\n") +
                                                bypasses.join(QLatin1Char('\n'))));
    }

    void orderedDocumentKeepsItsOrder()
    {
        auto parsed = jsonutil::parseOrderedJson(R"({"b":1,"a":{"d":2,"c":3}})", "o.json");
        QVERIFY(parsed);
        QCOMPARE(parsed->dump(), std::string(R"({"b":1,"a":{"d":2,"c":3}})"));
        QCOMPARE(jsonutil::parseOrderedJson(nestedArrays(65), "o.json").error().message,
                 std::string("JSON nested deeper than 64 levels"));
    }
};

QTEST_GUILESS_MAIN(tst_InputGuards)
#include "tst_inputguards.moc"
