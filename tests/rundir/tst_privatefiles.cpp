// Private run-directory files on a real file system: folders 0700 and files 0600 under umask 022,
// and symlinks planted in a run directory (run.json, events.jsonl, logs/) never followed, with
// the planted target left untouched; a FIFO in place of run.json does not block the reader.
#include "core/rundir/privatefiles.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace accel::rundir;

namespace {

mode_t modeOf(const QString &path)
{
    struct stat info {};
    return ::lstat(QFile::encodeName(path).constData(), &info) == 0 ? (info.st_mode & 07777) : 0;
}

QByteArray contentOf(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray("<unreadable>");
}

std::string native(const QString &path)
{
    return QFile::encodeName(path).toStdString();
}

struct Umask {
    explicit Umask(mode_t mask) : saved(::umask(mask)) {}
    ~Umask() { ::umask(saved); }
    mode_t saved;
};

} // namespace

class tst_PrivateFiles : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void privateRegardlessOfUmask()
    {
        const Umask open(022);
        QTemporaryDir root;
        const QString run = root.filePath(QStringLiteral("runs/r1"));
        QVERIFY(makePrivateDirectory(native(run)));
        QVERIFY(makePrivateDirectory(native(run + QStringLiteral("/logs"))));
        QCOMPARE(modeOf(run), mode_t(0700));
        QCOMPARE(modeOf(root.filePath(QStringLiteral("runs"))), mode_t(0700));
        QVERIFY(writeRunFile(native(run), "run.json", "{}"));
        QVERIFY(appendRunLine(native(run), "events.jsonl", "{\"event\":\"started\"}"));
        QVERIFY(appendRunLine(native(run), "logs/rank0.log", "hello"));
        for (const char *file : {"run.json", "events.jsonl", "logs/rank0.log"})
            QCOMPARE(modeOf(run + QLatin1Char('/') + QLatin1String(file)), mode_t(0600));
        // An existing folder of the caller's is made private too.
        const QString existing = root.filePath(QStringLiteral("existing"));
        QVERIFY(QDir().mkpath(existing));
        QCOMPARE(modeOf(existing), mode_t(0755));
        QVERIFY(makePrivateDirectory(native(existing)));
        QCOMPARE(modeOf(existing), mode_t(0700));
        auto text = readRunFile(native(run), "logs/rank0.log");
        QVERIFY(text);
        QCOMPARE(*text, std::string("hello\n"));
    }

    void plantedSymlinksAreNeverFollowed()
    {
        QTemporaryDir root;
        const QString run = root.filePath(QStringLiteral("run"));
        QVERIFY(makePrivateDirectory(native(run)));
        const QString victim = root.filePath(QStringLiteral("victim.txt"));
        QFile file(victim);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("root-only content\n");
        file.close();
        QVERIFY(QFile::link(victim, run + QStringLiteral("/events.jsonl")));
        QVERIFY(QFile::link(victim, run + QStringLiteral("/run.json")));
        QVERIFY(QFile::link(root.path(), run + QStringLiteral("/logs"))); // a folder elsewhere
        QVERIFY(QFile::link(victim, root.filePath(QStringLiteral("victim.txt.log"))));

        auto appended = appendRunLine(native(run), "events.jsonl", "{\"event\":\"lost\"}");
        QVERIFY(!appended);
        QVERIFY(QString::fromStdString(appended.error().toString()).contains(QStringLiteral("symlink")));
        QVERIFY(!readRunFile(native(run), "run.json"));
        QVERIFY(!readRunFile(native(run), "logs/victim.txt")); // through the symlinked folder
        QVERIFY(!appendRunLine(native(run), "logs/victim.txt", "x"));
        QVERIFY(!openRunFile(native(run), "../victim.txt", OpenFor::Read));
        QVERIFY(!openRunFile(native(run), "/etc/passwd", OpenFor::Read));
        QCOMPARE(contentOf(victim), QByteArray("root-only content\n"));

        // An atomic rewrite replaces the planted link itself.
        QVERIFY(writeRunFile(native(run), "run.json", "{\"state\":\"lost\"}"));
        QVERIFY(!QFileInfo(run + QStringLiteral("/run.json")).isSymLink());
        QCOMPARE(contentOf(victim), QByteArray("root-only content\n"));
        QCOMPARE(modeOf(run + QStringLiteral("/run.json")), mode_t(0600));

        // CreateOnly never reuses anything already there.
        QVERIFY(!openRunFile(native(run), "events.jsonl", OpenFor::CreateOnly));

        // The run directory itself as a symlink is refused.
        const QString linked = root.filePath(QStringLiteral("linked-run"));
        QVERIFY(QFile::link(run, linked));
        QVERIFY(!checkRealDirectory(native(linked)));
        QVERIFY(!readRunFile(native(linked), "run.json"));
        QVERIFY(!makePrivateDirectory(native(linked)));
    }

    // Regression (issue 33, item 5): under a folder that other users may write without the sticky
    // bit, one of them renamed the run folder away and put theirs in its place.
    void folderOthersCouldSwapIsRefused()
    {
        QTemporaryDir dir;
        const QString shared = dir.filePath(QStringLiteral("shared"));
        QVERIFY(QDir().mkpath(shared + QStringLiteral("/deeper")));
        QCOMPARE(::chmod(QFile::encodeName(shared).constData(), 0777), 0);
        auto refused = checkNoOtherUserCanSwap(native(shared + QStringLiteral("/deeper/new/run")));
        QVERIFY(!refused);
        QVERIFY2(refused.error().message.find(native(shared) +
                                              " may be written by other users (mode 0777, no sticky bit)") == 0,
                 refused.error().message.c_str());
        QCOMPARE(::chmod(QFile::encodeName(shared).constData(), 01777), 0); // as /tmp
        QVERIFY(checkNoOtherUserCanSwap(native(shared + QStringLiteral("/deeper/new/run"))));
        QVERIFY(checkNoOtherUserCanSwap(native(dir.filePath(QStringLiteral("run")))));
        QVERIFY(!checkNoOtherUserCanSwap("relative/run"));
        if (::geteuid() == 0) {
            // Group-writable (umask 002): fine when the group is the owner's alone (root's), not
            // when another account is in it (nogroup: nobody's primary group).
            QCOMPARE(::chmod(QFile::encodeName(shared).constData(), 0775), 0);
            QCOMPARE(::chown(QFile::encodeName(shared).constData(), 0, 0), 0);
            QVERIFY(checkNoOtherUserCanSwap(native(shared + QStringLiteral("/run"))));
            QCOMPARE(::chown(QFile::encodeName(shared).constData(), 0, 65534), 0);
            refused = checkNoOtherUserCanSwap(native(shared + QStringLiteral("/run")));
            QVERIFY(!refused);
            QVERIFY2(refused.error().message.find("(mode 0775, no sticky bit)") != std::string::npos,
                     refused.error().message.c_str());
            // A folder of another user: its owner may rename what is inside, sticky bit or not.
            QCOMPARE(::chown(QFile::encodeName(shared).constData(), 65534, 65534), 0);
            refused = checkNoOtherUserCanSwap(native(shared + QStringLiteral("/run")));
            QVERIFY(!refused);
            QVERIFY2(refused.error().message.find("belongs to another user (uid 65534)") != std::string::npos,
                     refused.error().message.c_str());
        }
    }

    // The supervisor holds its run folder by descriptor: files written after the folder was
    // renamed away and another put at its path land in the run's own folder.
    void heldFolderKeepsItsFilesAfterASwap()
    {
        QTemporaryDir dir;
        const QString run = dir.filePath(QStringLiteral("run"));
        QVERIFY(makePrivateDirectory(native(run)));
        QVERIFY(appendRunLine(native(run), "events.jsonl", "before"));
        QVERIFY(holdRunDirectory(native(run)));
        QVERIFY(QDir().rename(run, dir.filePath(QStringLiteral("moved"))));
        QVERIFY(QDir().mkpath(run));
        QVERIFY(appendRunLine(native(run), "events.jsonl", "after"));
        QVERIFY(writeRunFile(native(run), "run.json", "{}"));
        QCOMPARE(contentOf(dir.filePath(QStringLiteral("moved/events.jsonl"))), QByteArray("before\nafter\n"));
        QCOMPARE(contentOf(dir.filePath(QStringLiteral("moved/run.json"))), QByteArray("{}"));
        QVERIFY(QDir(run).entryList(QDir::NoDotAndDotDot | QDir::AllEntries | QDir::Hidden).isEmpty());
    }

    // run.json proves who may own the run's processes only in a folder nobody else may write.
    void runDirectoryOwnerIsTheFolders()
    {
        QTemporaryDir dir;
        const QString run = dir.filePath(QStringLiteral("run"));
        QVERIFY(makePrivateDirectory(native(run)));
        QVERIFY(writeRunFile(native(run), "run.json", "{}"));
        auto owner = runDirectoryOwner(native(run));
        QVERIFY2(owner, owner ? "" : owner.error().toString().c_str());
        QCOMPARE(*owner, std::uint32_t(::geteuid()));
        QCOMPARE(::chmod(QFile::encodeName(run).constData(), 0777), 0);
        owner = runDirectoryOwner(native(run));
        QVERIFY(!owner);
        QVERIFY2(owner.error().message.find("other users may write into it (mode 0777)") == 0,
                 owner.error().message.c_str());
    }

    void fifoDoesNotBlockTheReader()
    {
        QTemporaryDir root;
        QVERIFY(::mkfifo(QFile::encodeName(root.filePath(QStringLiteral("run.json"))).constData(), 0600) == 0);
        auto text = readRunFile(native(root.path()), "run.json"); // returns at once
        QVERIFY(!text);
        QVERIFY(QString::fromStdString(text.error().message).contains(QStringLiteral("regular file")));
    }

    void oversizedFileIsRefused()
    {
        QTemporaryDir root;
        QVERIFY(appendRunLine(native(root.path()), "run.json", std::string(5000, 'x')));
        auto text = readRunFile(native(root.path()), "run.json", 4096);
        QVERIFY(!text);
        QVERIFY(QString::fromStdString(text.error().message).contains(QStringLiteral("4096")));
    }
};

QTEST_GUILESS_MAIN(tst_PrivateFiles)
#include "tst_privatefiles.moc"
