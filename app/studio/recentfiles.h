// The most recently opened or saved config files, newest first, remembered in QSettings.
#pragma once

#include <QString>
#include <QStringList>

namespace accel::app {

class RecentFiles {
public:
    explicit RecentFiles(QString settingsKey = QStringLiteral("configure/recentFiles"), int maximum = 10);

    // Moves `path` (made absolute) to the front and stores the list.
    void add(const QString &path);
    void remove(const QString &path);
    // Stored entries, newest first.
    QStringList files() const;

private:
    QString m_settingsKey;
    int m_maximum;
};

} // namespace accel::app
