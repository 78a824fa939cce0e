// The rendezvous store of a run on one machine, attacked as another local user would (issue 33,
// item 2): a real c10d TCPStore on loopback, the ranks' view signed with the run's secret
// (core/runtime/signedstore.h) and a second, plain client that connects and writes keys. A value
// the run did not write is refused naming its key; a shared-memory segment is used only when it
// is named after the group's first rank, this user's, private and of the group's size.
#include "core/rundir/shmsegments.h"
#include "core/runtime/shmsegment.h"
#include "core/runtime/signedstore.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <QTest>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using accel::runtime::SignedStore;

namespace {

std::vector<uint8_t> bytes(const std::string &text)
{
    return std::vector<uint8_t>(text.begin(), text.end());
}

c10::intrusive_ptr<c10d::TCPStore> store(bool server, uint16_t port)
{
    c10d::TCPStoreOptions options;
    options.port = port;
    options.isServer = server;
    options.waitWorkers = false;
    options.timeout = std::chrono::milliseconds(5000);
    return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
}

// A segment the attacker prepared: named `name`, `bytes` long, mode `mode`.
void makeSegment(const std::string &name, size_t size, mode_t mode)
{
    ::shm_unlink(name.c_str());
    const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, mode);
    QVERIFY(fd >= 0);
    QCOMPARE(::fchmod(fd, mode), 0);
    QCOMPARE(::ftruncate(fd, off_t(size)), 0);
    ::close(fd);
}

} // namespace

class tst_StoreAuth : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        m_server = store(true, 0);
        m_port = uint16_t(m_server->getPort());
        m_rank = c10::make_intrusive<SignedStore>(store(false, m_port), m_secret);
        m_attacker = store(false, m_port);
    }

    // The attacker can write keys, but the ranks refuse what they did not sign: a value of their
    // own, and a signed value of this run moved to another key.
    void valuesTheRunDidNotWriteAreRefused()
    {
        m_rank->set("shm/0/name", bytes("/accel-allreduce-1-2"));
        QCOMPARE(m_rank->get("shm/0/name"), bytes("/accel-allreduce-1-2"));
        const std::vector<uint8_t> signedValue = m_attacker->get("shm/0/name");
        QVERIFY(signedValue.size() == 32 + 20); // the store sees a signature, never the secret
        QVERIFY(std::search(signedValue.begin(), signedValue.end(), m_secret.begin(), m_secret.end()) ==
                signedValue.end());

        m_attacker->set("shm/0/name", bytes("/attacker-segment"));
        try {
            m_rank->get("shm/0/name");
            QFAIL("an unsigned value was accepted");
        } catch (const std::exception &e) {
            QVERIFY2(QByteArray(e.what()).contains("'shm/0/name' is not signed with this run's secret"), e.what());
        }
        m_attacker->set("shm/1/name", signedValue); // replayed under another key
        QVERIFY_THROWS_EXCEPTION(std::exception, m_rank->get("shm/1/name"));
        // Another run's secret does not sign for this one.
        SignedStore other(store(false, m_port), "another run's secret");
        other.set("shm/2/name", bytes("/accel-allreduce-1-2"));
        QVERIFY_THROWS_EXCEPTION(std::exception, m_rank->get("shm/2/name"));
    }

    void segmentsAreCheckedBeforeTheyAreMapped_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("mode");
        QTest::addColumn<qint64>("size");
        QTest::addColumn<QString>("refusal");
        const std::string first = accel::rundir::allReduceSegmentName(m_firstRankPid, 77);
        QTest::newRow("named after another process")
            << QString::fromStdString(accel::rundir::allReduceSegmentName(m_firstRankPid + 1, 77)) << 0600
            << qint64(4096) << QStringLiteral("is not named after the group's first rank");
        QTest::newRow("readable by others")
            << QString::fromStdString(first) << 0644 << qint64(4096) << QStringLiteral("is not this run's: owner uid");
        QTest::newRow("of another size") << QString::fromStdString(first) << 0600 << qint64(8192)
                                         << QStringLiteral("bytes, not the group's 4096");
    }

    // Rank 1 of a group of two, given a segment name that the store's (signed) value names.
    void segmentsAreCheckedBeforeTheyAreMapped()
    {
        QFETCH(QString, name);
        QFETCH(int, mode);
        QFETCH(qint64, size);
        QFETCH(QString, refusal);
        makeSegment(name.toStdString(), size_t(size), mode_t(mode));
        const std::string prefix = "case/" + std::string(QTest::currentDataTag()) + "/";
        m_rank->set("rank/0", bytes("host pid " + std::to_string(m_firstRankPid)));
        m_rank->set("rank/1", bytes("host pid " + std::to_string(::getpid())));
        m_rank->set(prefix + "name", bytes(name.toStdString()));
        m_rank->set(prefix + "ok/0", bytes("1"));
        std::string why;
        void *base = accel::runtime::mapSharedSegment(*m_rank, prefix, 1, {0, 1}, 4096, {}, &why);
        ::shm_unlink(name.toLocal8Bit().constData());
        QVERIFY(!base);
        QVERIFY2(QString::fromStdString(why).contains(refusal), why.c_str());
        // Rank 1 told the group, so rank 0 gives up shared memory too.
        const std::vector<uint8_t> answer =
            SignedStore::verify(m_secret, prefix + "ok/1", m_attacker->get(prefix + "ok/1"));
        QVERIFY(std::string(answer.begin(), answer.end()).rfind("0:", 0) == 0);
    }

    void segmentOfAnotherUserIsRefused()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to give the segment to another user (fchown)");
        const std::string name = accel::rundir::allReduceSegmentName(m_firstRankPid, 78);
        makeSegment(name, 4096, 0600);
        const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
        QVERIFY(fd >= 0);
        QCOMPARE(::fchown(fd, 65534, 65534), 0); // nobody's, as the attacker's own segment is
        ::close(fd);
        m_rank->set("rank/0", bytes("host pid " + std::to_string(m_firstRankPid)));
        m_rank->set("rank/1", bytes("host pid " + std::to_string(::getpid())));
        m_rank->set("nobody/name", bytes(name));
        m_rank->set("nobody/ok/0", bytes("1"));
        std::string why;
        void *base = accel::runtime::mapSharedSegment(*m_rank, "nobody/", 1, {0, 1}, 4096, {}, &why);
        ::shm_unlink(name.c_str());
        QVERIFY(!base);
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("owner uid 65534")), why.c_str());
    }

private:
    const std::string m_secret = "0123456789abcdef0123456789abcdef";
    const std::int64_t m_firstRankPid = ::getpid() + 100000;
    c10::intrusive_ptr<c10d::TCPStore> m_server;
    uint16_t m_port = 0;
    c10::intrusive_ptr<SignedStore> m_rank;
    c10::intrusive_ptr<c10d::TCPStore> m_attacker;
};

QTEST_GUILESS_MAIN(tst_StoreAuth)
#include "tst_storeauth.moc"
