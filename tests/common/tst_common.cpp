#include "core/common/fileutil.h"
#include "core/common/result.h"
#include "core/common/text.h"
#include "tests/common/sourcelines.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

using namespace accel;

class tst_Common : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void atomicWriteReplacesWholeFile()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("a.yaml")).toStdString();
        QVERIFY(fileutil::writeFileAtomic(path, "first\n").has_value());
        QVERIFY(fileutil::writeFileAtomic(path, "second\n").has_value());
        auto content = fileutil::readFile(path);
        QVERIFY(content.has_value());
        QCOMPARE(*content, std::string("second\n"));
        // No temporary files are left behind.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
        struct stat st {};
        QCOMPARE(::stat(path.c_str(), &st), 0);
        QVERIFY((st.st_mode & 0044) != 0); // readable like an ordinary file, not mkstemp's 0600
    }

    void atomicWriteIntoMissingFolderFails()
    {
        auto result = fileutil::writeFileAtomic("/nonexistent-folder/x.yaml", "x");
        QVERIFY(!result.has_value());
        QCOMPARE(result.error().code, ErrorCode::Io);
        QCOMPARE(result.error().context, std::string("/nonexistent-folder/x.yaml"));
    }

    void readMissingFileIsNotFound()
    {
        auto result = fileutil::readFile("/nonexistent-file");
        QVERIFY(!result.has_value());
        QCOMPARE(result.error().code, ErrorCode::NotFound);
        QCOMPARE(exitCodeFor(result.error()), 2);
    }

    void closestMatchSuggestsTypos()
    {
        QCOMPARE(fileutil::editDistance("kitten", "sitting"), size_t(3));
        QCOMPARE(fileutil::closestMatch("num_proceses", {"num_processes", "num_machines"}),
                 std::string("num_processes"));
        QCOMPARE(fileutil::closestMatch("zzzzzzzz", {"num_processes", "num_machines"}), std::string());
    }

    void expandUserUsesHome()
    {
        qputenv("HOME", "/home/someone");
        QCOMPARE(fileutil::expandUser("~/hostfile"), std::string("/home/someone/hostfile"));
        QCOMPARE(fileutil::expandUser("~other/x"), std::string("~other/x"));
        QCOMPARE(fileutil::expandUser("/abs"), std::string("/abs"));
    }

    void textHelpers()
    {
        QVERIFY(text::equalsIgnoringCase("Inductor", "INDUCTOR"));
        QVERIFY(!text::equalsIgnoringCase("inductor", "inductors"));
        QVERIFY(!text::equalsIgnoringCase("a-b", "a_b"));
        QCOMPARE(text::splitTrimmed(" a, b,,c \r", ","), (std::vector<std::string>{"a", "b", "c"}));
        QCOMPARE(text::splitTrimmed("host1\nhost2 , host3\n", ",\n"),
                 (std::vector<std::string>{"host1", "host2", "host3"}));
        QCOMPARE(text::splitTrimmed(" ; ", ";"), std::vector<std::string>{});
    }

    // One table per fact: each value below is declared in its home file(s) only; a code line of app,
    // core, launcher or monitor that spells it again fails here (comment lines aside). The listed
    // exceptions are places not yet moved, each with its reason; a new echo is never an exception.
    void echoesStayDeclaredOnce()
    {
        struct Echo {
            const char *what;
            QRegularExpression pattern;
            QStringList homes;
            QMap<QString, QString> exceptions;
        };
        const QList<Echo> echoes{
            {"the manifest's file name",
             QRegularExpression(QStringLiteral(R"("run\.json")")),
             {QStringLiteral("core/rundir/runlayout.h")},
             {}},
            {"the events file's name",
             QRegularExpression(QStringLiteral(R"("events\.jsonl")")),
             {QStringLiteral("core/rundir/runlayout.h")},
             {}},
            {"the default main process port",
             QRegularExpression(QStringLiteral(R"(\b29500\b)")),
             {QStringLiteral("core/common/distributeddefaults.h")},
             {}},
            {"the worker's override variable",
             QRegularExpression(QStringLiteral("ACCEL_WORKER_PROGRAM")),
             {QStringLiteral("core/common/programs.h")},
             {}},
            {"FSDP's values and the fsdp_min_num_params default",
             QRegularExpression(QStringLiteral(R"lit("(FULL_SHARD|SHARD_GRAD_OP|NO_SHARD|HYBRID_SHARD(_ZERO2)?|)lit"
                                               R"lit(TRANSFORMER_BASED_WRAP|SIZE_BASED_WRAP|NO_WRAP|BACKWARD_PRE|)lit"
                                               R"lit(BACKWARD_POST|NO_PREFETCH|(FULL|SHARDED|LOCAL)_STATE_DICT|)lit"
                                               R"lit(100000000)")lit")),
             {QStringLiteral("core/common/fsdpvalues.h"), QStringLiteral("core/common/fsdpvalues.cpp")},
             {}},
            {"compute_environment and mixed_precision values listed by hand in a message",
             QRegularExpression(QStringLiteral("LOCAL_MACHINE, AMAZON_SAGEMAKER|no, fp16, bf16, fp8")),
             {},
             {}},
            {"a list of mixed_precision names",
             QRegularExpression(QStringLiteral(R"re("no",\s*"(fp16|bf16|fp8)")re")),
             {QStringLiteral("core/common/mixedprecision.cpp")},
             {}},
            {"an ACCELERATE_* variable's name written out in a string",
             QRegularExpression(QStringLiteral("\"[^\"]*\\bACCELERATE_")), // a name, a prefix or a suffix rule
             {QStringLiteral("core/common/accelerateenv.h")},
             {}},
            {"a suffix of an ACCELERATE_FP8_ or ACCELERATE_DEEPSPEED_ variable written out",
             QRegularExpression(QStringLiteral(R"re("((OVERRIDE_)?(FPROP|DGRAD|WGRAD)|AMAX_HISTORY_LEN(GTH)?|)re"
                                               R"re(AMAX_COMPUTE_ALGO(RITHM)?|OPT(IMIZATION)?_LEVEL|PAD_INNER_DIM|)re"
                                               R"re(ENABLE_FSDP_FLOAT8_ALL_GATHER|USE_MXFP8_BLOCK_SCALING|)re"
                                               R"re(USE_AUTOCAST_DURING_EVAL|ZERO3_INIT|MOE_LAYER_CLS_NAMES)")re")),
             {QStringLiteral("core/common/accelerateenv.h")},
             {}},
            {"a report's name and version spelled in a help text",
             QRegularExpression(QStringLiteral(R"((\(|schema )accel\.[a-z.-]+, version [0-9])")),
             {},
             {}},
            {"accel stack's report name",
             QRegularExpression(QStringLiteral(R"("accel\.stack")")),
             {QStringLiteral("app/cli/stackreport.h")},
             {}},
            {"an atomic file writer of its own (rename, mkstemp, QSaveFile): use core/common/atomicfile.h",
             QRegularExpression(QStringLiteral(R"((::|\.|^|[(!=,]\s*)rename(at)?\(|\bmkstemp\(|\bQSaveFile\b)")),
             {QStringLiteral("core/common/fileutil.cpp")},
             {{QStringLiteral("core/common/checkpointnames.cpp"),
               QStringLiteral("renames checkpoint folders into place, no file written")},
              {QStringLiteral("core/rundir/privatefiles.cpp"),
               QStringLiteral("run files: private (0600), O_EXCL and O_NOFOLLOW relative to the held run directory, "
                              "run.json's reserved blocks; guarantees the general writer does not give")},
              {QStringLiteral("app/studio/monitor/chartseries.cpp"),
               QStringLiteral("Qt's own atomic writer (temporary, fsync and rename on commit) under a QTextStream")},
              {QStringLiteral("monitor/tarwriter.h"),
               QStringLiteral(
                   "Qt's own atomic writer (temporary, fsync and rename on commit) under the gzip stream")}}},
            {"a hand-written case or white-space loop: use core/common/text.h",
             QRegularExpression(QStringLiteral("\\b(tolower|toupper|isspace)\\(|find_last_not_of\\(\" ")),
             {QStringLiteral("core/common/text.h")},
             {{QStringLiteral("core/common/yamldocument.cpp"),
               QStringLiteral("scans YAML's tokens at white space, not a trim")},
              {QStringLiteral("core/bigmodel/hubmodel.cpp"),
               QStringLiteral("refuses a revision holding white space, a test of each character, not a trim")}}},
            {"tensor parallelism's refusal of a model worded again",
             QRegularExpression(QStringLiteral("\"[^\"]*(has no tensor-parallel plan|are not split by the native "
                                               "tensor parallelism|must (each )?divide by tp_size)")),
             {QStringLiteral("core/plan/tensorparallelrefusal.h")},
             {}},
        };
        for (const Echo &echo : echoes)
            QVERIFY2(echo.pattern.isValid(), echo.what);
        QStringList found;
        const int files = test::forEachSourceLine([&](const QString &relative, int line, const QString &read) {
            QString text = read.trimmed();
            if (text.startsWith(QLatin1String("//")) || text.startsWith(QLatin1Char('*')) ||
                text.startsWith(QLatin1String("/*")))
                return;
            if (const qsizetype comment = text.indexOf(QLatin1String(" // ")); comment >= 0)
                text.truncate(comment); // a comment after the code
            for (const Echo &echo : echoes) {
                if (echo.homes.contains(relative) || echo.exceptions.contains(relative))
                    continue;
                if (echo.pattern.match(text).hasMatch())
                    found
                        << QStringLiteral("%1:%2: %3: %4").arg(relative).arg(line).arg(QLatin1String(echo.what), text);
            }
        });
        QVERIFY2(files > 100, qPrintable(QString::number(files)));
        QVERIFY2(
            found.isEmpty(),
            qPrintable(QStringLiteral("%1 code lines spell again what is declared elsewhere:\n").arg(found.size()) +
                       found.join(QLatin1Char('\n'))));
    }
};

QTEST_GUILESS_MAIN(tst_Common)
#include "tst_common.moc"
