#include "monitor/trackers/trackiodatabase.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include <atomic>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

namespace accel::trackers {

namespace {

constexpr int kRowsPerPoll = 5000;

void addValues(const QJsonObject &object, const QString &prefix, qint64 step, double time, TrackerSamples &out)
{
    for (auto it = object.begin(); it != object.end(); ++it) {
        const QString key = prefix + it.key();
        const QJsonValue value = it.value();
        double number = 0;
        if (value.isDouble()) {
            number = value.toDouble();
        } else if (value.isBool()) {
            number = value.toBool() ? 1.0 : 0.0;
        } else if (value.isString() && value.toString() == QLatin1String("NaN")) {
            number = std::numeric_limits<double>::quiet_NaN();
        } else if (value.isString() && value.toString() == QLatin1String("Infinity")) {
            number = std::numeric_limits<double>::infinity();
        } else if (value.isString() && value.toString() == QLatin1String("-Infinity")) {
            number = -std::numeric_limits<double>::infinity();
        } else if (value.isObject() && !value.toObject().contains(QLatin1String("_type"))) {
            addValues(value.toObject(), key + QLatin1Char('/'), step, time, out);
            continue;
        } else {
            continue; // text, media, tables
        }
        out.push_back({key, number, step, time, false});
    }
}

} // namespace

TrackioDatabase::TrackioDatabase(QString path) : m_path(std::move(path))
{
    static std::atomic<int> counter{0};
    m_connection = QStringLiteral("accel-trackio-%1").arg(counter++);
}

TrackioDatabase::~TrackioDatabase()
{
    if (QSqlDatabase::contains(m_connection)) {
        QSqlDatabase::database(m_connection, false).close();
        QSqlDatabase::removeDatabase(m_connection);
    }
}

bool TrackioDatabase::driverAvailable()
{
    return QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE"));
}

bool TrackioDatabase::open(QString *problem)
{
    if (m_open)
        return true;
    if (!driverAvailable()) {
        *problem = QStringLiteral("QtSql's SQLite driver is not installed (Debian: libqt6sql6-sqlite)");
        return false;
    }
    QSqlDatabase database = QSqlDatabase::contains(m_connection)
                                ? QSqlDatabase::database(m_connection, false)
                                : QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
    database.setDatabaseName(m_path);
    database.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=200"));
    if (!database.open()) {
        *problem = database.lastError().text();
        return false;
    }
    m_open = true;
    return true;
}

TrackioDatabase::Schema TrackioDatabase::schema()
{
    if (m_schema != Schema::NotYet)
        return m_schema;
    QString problem;
    if (!open(&problem))
        return m_schema;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    if (!query.exec(QStringLiteral("PRAGMA table_info(metrics)")))
        return m_schema;
    std::set<QString> columns;
    while (query.next())
        columns.insert(query.value(1).toString());
    if (columns.empty()) {
        // No metrics table yet; a database with other tables already is someone else's.
        QSqlQuery tables(QSqlDatabase::database(m_connection, false));
        if (tables.exec(QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table'")) && tables.next() &&
            tables.value(0).toInt() > 0)
            m_schema = Schema::Other;
        return m_schema;
    }
    const bool trackio = columns.count(QStringLiteral("id")) && columns.count(QStringLiteral("step")) &&
                         columns.count(QStringLiteral("timestamp")) && columns.count(QStringLiteral("metrics")) &&
                         columns.count(QStringLiteral("run_name"));
    m_schema = trackio ? Schema::Trackio : Schema::Other;
    return m_schema;
}

TrackerPoll TrackioDatabase::poll()
{
    TrackerPoll poll;
    if (schema() != Schema::Trackio)
        return poll;
    QSqlQuery query(QSqlDatabase::database(m_connection, false));
    query.setForwardOnly(true);
    query.prepare(QStringLiteral("SELECT id, step, timestamp, metrics FROM metrics WHERE id > ? ORDER BY id LIMIT %1")
                      .arg(kRowsPerPoll));
    query.addBindValue(m_lastId);
    if (!query.exec()) {
        poll.problem = query.lastError().text();
        return poll;
    }
    while (query.next()) {
        m_lastId = query.value(0).toLongLong();
        const qint64 step = query.value(1).toLongLong();
        const QDateTime when = QDateTime::fromString(query.value(2).toString(), Qt::ISODateWithMs);
        const double time = when.isValid() ? double(when.toMSecsSinceEpoch()) / 1000.0 : 0.0;
        const QJsonDocument values = QJsonDocument::fromJson(query.value(3).toByteArray());
        if (!values.isObject()) {
            poll.problem = QStringLiteral("row %1 of the metrics table is not a JSON object: skipped").arg(m_lastId);
            continue;
        }
        addValues(values.object(), QString(), step, time, poll.samples);
    }
    query.finish(); // no read transaction held until the next poll
    return poll;
}

} // namespace accel::trackers
