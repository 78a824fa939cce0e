#include "core/common/fileutil.h"
#include "core/common/result.h"

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
};

QTEST_GUILESS_MAIN(tst_Common)
#include "tst_common.moc"
