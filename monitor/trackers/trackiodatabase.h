// TrackioDatabase: the metrics trackio keeps in its project database (<TRACKIO_DIR>/<project>.db,
// SQLite), read live through QtSql's SQLite driver. Rows of the table metrics hold a step, an ISO
// timestamp and the logged values as a JSON object ({"loss": 0.5, "nan": "NaN"}); every row added
// since the last poll is read, in id order, without holding a transaction between polls (trackio's
// writer is never held up). Numbers and booleans are scalars ("NaN", "Infinity", "-Infinity" are
// how trackio stores non-finite values); nested objects become "outer/inner" keys; other values
// (media, tables, text) are skipped. A database whose tables are not trackio's is not one.
#pragma once

#include "monitor/trackers/trackersample.h"

namespace accel::trackers {

class TrackioDatabase : public TrackerSource {
public:
    explicit TrackioDatabase(QString path);
    ~TrackioDatabase() override;
    TrackioDatabase(const TrackioDatabase &) = delete;
    TrackioDatabase &operator=(const TrackioDatabase &) = delete;

    enum class Schema { NotYet, Trackio, Other };
    // Whether the database holds trackio's metrics table (NotYet: no such table yet, or not readable).
    Schema schema();
    TrackerPoll poll() override;

    // Whether QtSql's SQLite driver is there (Debian: libqt6sql6-sqlite).
    static bool driverAvailable();

private:
    bool open(QString *problem);

    QString m_path;
    QString m_connection; // QSqlDatabase connection name, one per reader
    bool m_open = false;
    Schema m_schema = Schema::NotYet;
    qint64 m_lastId = 0;
};

} // namespace accel::trackers
