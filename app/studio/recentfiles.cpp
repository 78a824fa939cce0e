#include "app/studio/recentfiles.h"

#include <QFileInfo>
#include <QSettings>

namespace accel::app {

RecentFiles::RecentFiles(QString settingsKey, int maximum) : m_settingsKey(std::move(settingsKey)), m_maximum(maximum)
{}

void RecentFiles::add(const QString &path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    QStringList list = files();
    list.removeAll(absolute);
    list.prepend(absolute);
    while (list.size() > m_maximum)
        list.removeLast();
    QSettings().setValue(m_settingsKey, list);
}

void RecentFiles::remove(const QString &path)
{
    QStringList list = files();
    list.removeAll(QFileInfo(path).absoluteFilePath());
    QSettings().setValue(m_settingsKey, list);
}

QStringList RecentFiles::files() const
{
    return QSettings().value(m_settingsKey).toStringList();
}

} // namespace accel::app
