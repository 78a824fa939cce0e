// The studio's command line and the line diff used before saving.
#include "app/studio/studiooptions.h"
#include "app/studio/textdiff.h"

#include <QtTest>

using namespace accel::app;

class tst_StudioOptions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesEveryOption()
    {
        const auto parsed = parseStudioOptions({QStringLiteral("accel-studio"), QStringLiteral("--demo"),
                                                QStringLiteral("--page"), QStringLiteral("Big-Models"),
                                                QStringLiteral("--config=/tmp/a.yaml"), QStringLiteral("--screenshot"),
                                                QStringLiteral("out/shot.png"), QStringLiteral("--theme=Dark")});
        QVERIFY2(parsed.error.isEmpty(), qPrintable(parsed.error));
        QVERIFY(parsed.options.demo);
        QCOMPARE(*parsed.options.page, Page::BigModels);
        QCOMPARE(parsed.options.configFile, QStringLiteral("/tmp/a.yaml"));
        QCOMPARE(parsed.options.screenshotFile, QStringLiteral("out/shot.png"));
        QCOMPARE(parsed.options.theme, QStringLiteral("dark"));
    }

    void rejectsBadInput_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("errorPart");
        QTest::newRow("unknown page") << QStringList{QStringLiteral("--page"), QStringLiteral("wizard")}
                                      << QStringLiteral("expected one of hardware, configure, launch, runs, bigmodels");
        QTest::newRow("missing value") << QStringList{QStringLiteral("--config")}
                                       << QStringLiteral("--config needs a value");
        QTest::newRow("not png") << QStringList{QStringLiteral("--screenshot"), QStringLiteral("a.jpg")}
                                 << QStringLiteral("must end in .png");
        QTest::newRow("unknown flag") << QStringList{QStringLiteral("--fast")}
                                      << QStringLiteral("unknown argument '--fast'");
        QTest::newRow("unknown theme") << QStringList{QStringLiteral("--theme"), QStringLiteral("blue")}
                                       << QStringLiteral("expected one of system, light, dark");
    }
    void rejectsBadInput()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, errorPart);
        arguments.prepend(QStringLiteral("accel-studio"));
        const auto parsed = parseStudioOptions(arguments);
        QVERIFY2(parsed.error.contains(errorPart), qPrintable(parsed.error));
    }

    void oneDashArgumentsMayBeQtOptions()
    {
        // -platform / -style are QApplication's; the early parse (before it exists) must not reject them.
        auto parsed = parseStudioOptions({QStringLiteral("accel-studio"), QStringLiteral("-platform"),
                                          QStringLiteral("offscreen"), QStringLiteral("--help")});
        QVERIFY(!parsed.error.isEmpty());
        QVERIFY(parsed.maybeQtOption);
        parsed = parseStudioOptions({QStringLiteral("accel-studio"), QStringLiteral("--fast")});
        QVERIFY(!parsed.maybeQtOption);
        char program[] = "accel-studio";
        char version[] = "--version";
        char *argv[] = {program, version};
        parsed = parseStudioOptions(rawArguments(2, argv));
        QVERIFY2(parsed.error.isEmpty(), qPrintable(parsed.error));
        QVERIFY(parsed.options.version);
    }

    void usageDescribesTheDemo()
    {
        // --demo loads the demo job into the Launch page (it used to claim the Hardware page).
        const QString usage = studioUsage();
        const QString demoLine = usage.section(QStringLiteral("--demo "), 1).section(QLatin1Char('\n'), 0, 1);
        QVERIFY2(demoLine.contains(QStringLiteral("demo job")) && demoLine.contains(QStringLiteral("Launch page")),
                 qPrintable(demoLine));
        QVERIFY(!demoLine.contains(QStringLiteral("Hardware")));
    }

    void pageNamesRoundTrip()
    {
        for (int i = 0; i < pageCount; ++i) {
            const auto page = static_cast<Page>(i);
            QCOMPARE(pageFromName(pageName(page)), std::optional<Page>(page));
            QCOMPARE(pageFromName(pageTitle(page)), std::optional<Page>(page));
        }
    }

    void diffMarksChangedLines()
    {
        const QVector<DiffLine> diff =
            diffLines(QStringLiteral("a: 1\nb: 2\nc: 3\n"), QStringLiteral("a: 1\nb: 5\nc: 3\nd: 4\n"));
        QCOMPARE(formatDiff(diff), QStringLiteral("  a: 1\n- b: 2\n+ b: 5\n  c: 3\n+ d: 4\n"));
        QCOMPARE(formatDiff(diffLines(QStringLiteral("x\n"), QStringLiteral("x\n"))), QStringLiteral("  x\n"));
    }
};

QTEST_GUILESS_MAIN(tst_StudioOptions)
#include "tst_studiooptions.moc"
