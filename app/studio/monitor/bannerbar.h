// BannerBar: the warnings above the Monitor charts. It reads the events of each followed run and
// keeps one banner per open problem: a suspected hang, a straggling rank, a failed rank or run.
// Cleared events (hang_cleared, straggler_cleared, a restart) take their banner away again.
// Ranks that exit after the supervisor began tearing the run down (a stop, or another rank's
// failure) were stopped, not failed: a stopped run shows one neutral "stopped" banner.
// A multi-node run's events carry their node: each node's problems are banners of their own that
// name it ("RUN (node1) failed ...").
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
    // Drops the banners of one run (no longer followed).
    void removeRun(const QString &runLabel);
    // The banner texts shown now, in order of their keys.
    QStringList messages() const;

private:
    enum class Severity { Info, Warning, Error };
    void setBanner(const QString &key, const QString &text, Severity severity);
    void removeBanner(const QString &key);
    void removeBannersStartingWith(const QString &prefix);

    QVBoxLayout *m_layout = nullptr;
    QMap<QString, QLabel *> m_banners;
    QMap<QString, bool> m_tearingDown; // by run prefix: stopping_ranks seen in this attempt
};

} // namespace accel::app
