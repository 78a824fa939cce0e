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
        const auto parsed =
            parseStudioOptions({QStringLiteral("accel-studio"), QStringLiteral("--demo"), QStringLiteral("--page"),
                                QStringLiteral("Big-Models"), QStringLiteral("--config=/tmp/a.yaml"),
                                QStringLiteral("--screenshot"), QStringLiteral("out/shot.png")});
        QVERIFY2(parsed.error.isEmpty(), qPrintable(parsed.error));
        QVERIFY(parsed.options.demo);
        QCOMPARE(*parsed.options.page, Page::BigModels);
        QCOMPARE(parsed.options.configFile, QStringLiteral("/tmp/a.yaml"));
        QCOMPARE(parsed.options.screenshotFile, QStringLiteral("out/shot.png"));
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
    }
    void rejectsBadInput()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, errorPart);
        arguments.prepend(QStringLiteral("accel-studio"));
        const auto parsed = parseStudioOptions(arguments);
        QVERIFY2(parsed.error.contains(errorPart), qPrintable(parsed.error));
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
