// BannerBar: the warnings above the Monitor charts. It reads the events of each followed run and
// keeps one banner per open problem: a suspected hang, a straggling rank, a failed rank or run.
// Cleared events (hang_cleared, straggler_cleared, a restart) take their banner away again.
#pragma once

#include "monitor/runevent.h"

#include <QMap>
#include <QWidget>

class QLabel;
class QVBoxLayout;

namespace accel::app {

class BannerBar : public QWidget {
    Q_OBJECT
public:
    explicit BannerBar(QWidget *parent = nullptr);

    void observe(const QString &runLabel, const QList<monitor::RunEvent> &events);
    void clear();
    // The banner texts shown now, in order of their keys.
    QStringList messages() const;

private:
    void setBanner(const QString &key, const QString &text, bool error);
    void removeBanner(const QString &key);
    void removeBannersStartingWith(const QString &prefix);

    QVBoxLayout *m_layout = nullptr;
    QMap<QString, QLabel *> m_banners;
};

} // namespace accel::app
