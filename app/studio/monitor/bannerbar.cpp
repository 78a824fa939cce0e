#include "app/studio/monitor/bannerbar.h"

#include "core/rundir/runlayout.h"

#include <QJsonDocument>
#include <QLabel>
#include <QVBoxLayout>

namespace accel::app {

BannerBar::BannerBar(QWidget *parent) : QWidget(parent), m_layout(new QVBoxLayout(this))
{
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_layout->setSpacing(2);
    setVisible(false);
}

void BannerBar::observe(const QString &run, const QList<monitor::RunEvent> &events)
{
    for (const auto &e : events) {
        // A multi-node run's events come from its nodes: each node has its banners and is named.
        const QString runLabel = e.node.isEmpty() ? run : tr("%1 (%2)").arg(run, e.node);
        const QString prefix =
            e.node.isEmpty() ? run + QLatin1Char('/') : run + QLatin1Char('/') + e.node + QLatin1Char('/');
        const auto &f = e.fields;
        const rundir::EventKind kind = e.kind();
        if (kind == rundir::EventKind::HangSuspected) {
            setBanner(prefix + QStringLiteral("hang"),
                      tr("%1: no rank made progress for %2 s (threshold %3 s): the run may be hung.")
                          .arg(runLabel)
                          .arg(f.value(QStringLiteral("seconds_without_progress")).toDouble(), 0, 'f', 0)
                          .arg(f.value(QStringLiteral("threshold_s")).toDouble(), 0, 'f', 0),
                      Severity::Error);
        } else if (kind == rundir::EventKind::HangCleared) {
            removeBanner(prefix + QStringLiteral("hang"));
        } else if (kind == rundir::EventKind::StragglerDetected) {
            setBanner(prefix + QStringLiteral("straggler/%1").arg(e.rank),
                      tr("%1: rank %2 is a straggler: %3 s per step vs. %4 s on the other ranks.")
                          .arg(runLabel)
                          .arg(e.rank)
                          .arg(f.value(QStringLiteral("step_time_s")).toDouble(), 0, 'g', 3)
                          .arg(f.value(QStringLiteral("others_median_step_time_s")).toDouble(), 0, 'g', 3),
                      Severity::Warning);
        } else if (kind == rundir::EventKind::StragglerCleared) {
            removeBanner(prefix + QStringLiteral("straggler/%1").arg(e.rank));
        } else if (kind == rundir::EventKind::RankExited) {
            const int exitCode = f.value(QStringLiteral("exit_code")).toInt();
            const int signal = f.value(QStringLiteral("signal")).toInt();
            if ((exitCode != 0 || signal != 0) && !m_tearingDown.value(prefix)) {
                setBanner(prefix + QStringLiteral("failed/%1").arg(e.rank),
                          tr("%1: rank %2 failed: %3.")
                              .arg(runLabel)
                              .arg(e.rank)
                              .arg(f.value(QStringLiteral("result")).toString(QStringLiteral("exit %1").arg(exitCode))),
                          Severity::Error);
            }
        } else if (kind == rundir::EventKind::StoppingRanks) {
            m_tearingDown[prefix] = true;
            const QString reason = f.value(QStringLiteral("reason")).toString();
            if (!reason.startsWith(QLatin1String("rank "))) // a stop request, not a rank's failure
                setBanner(prefix + QStringLiteral("run"), tr("%1: stopping (%2).").arg(runLabel, reason),
                          Severity::Info);
        } else if (kind == rundir::EventKind::Restarting || kind == rundir::EventKind::RankStarted) {
            m_tearingDown[prefix] = false;
            if (kind == rundir::EventKind::Restarting) {
                removeBannersStartingWith(prefix + QStringLiteral("failed/"));
                removeBanner(prefix + QStringLiteral("hang"));
            }
        } else if (kind == rundir::EventKind::Finished) {
            const QString state = f.value(QStringLiteral("state")).toString();
            removeBanner(prefix + QStringLiteral("hang"));
            if (state == QLatin1String(rundir::state::Stopped)) {
                removeBannersStartingWith(prefix + QStringLiteral("failed/"));
                const QString reason = f.value(QStringLiteral("reason")).toString();
                setBanner(prefix + QStringLiteral("run"),
                          reason.isEmpty() ? tr("%1 was stopped.").arg(runLabel)
                                           : tr("%1 was stopped (%2).").arg(runLabel, reason),
                          Severity::Info);
            } else if (state == QLatin1String(rundir::state::Succeeded)) {
                removeBanner(prefix + QStringLiteral("run"));
            } else if (state == QLatin1String(rundir::state::Failed)) {
                setBanner(prefix + QStringLiteral("run"),
                          tr("%1 failed (exit code %2): %3")
                              .arg(runLabel)
                              .arg(f.value(QStringLiteral("exit_code")).toInt())
                              .arg(f.value(QStringLiteral("reason")).toString()),
                          Severity::Error);
            }
        } else if (kind == rundir::EventKind::Lost) {
            setBanner(prefix + QStringLiteral("run"),
                      tr("%1 is lost: its supervisor (pid %2) is gone.")
                          .arg(runLabel)
                          .arg(f.value(QStringLiteral("supervisor_pid")).toInt()),
                      Severity::Error);
        }
    }
}

void BannerBar::clear()
{
    for (auto *label : std::as_const(m_banners))
        delete label;
    m_banners.clear();
    m_tearingDown.clear();
    setVisible(false);
}

void BannerBar::removeRun(const QString &runLabel)
{
    const QString prefix = runLabel + QLatin1Char('/');
    removeBannersStartingWith(prefix);
    m_tearingDown.removeIf([&prefix](const auto &entry) { return entry.key().startsWith(prefix); }); // nodes too
}

QStringList BannerBar::messages() const
{
    QStringList out;
    for (const auto *label : m_banners)
        out.append(label->text());
    return out;
}

void BannerBar::setBanner(const QString &key, const QString &text, Severity severity)
{
    QLabel *label = m_banners.value(key);
    if (!label) {
        label = new QLabel(this);
        label->setWordWrap(true);
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        m_layout->addWidget(label);
        m_banners.insert(key, label);
    }
    label->setText(text);
    // A coloured bar at the left on a translucent tint: readable on light and dark palettes alike.
    const char *color = severity == Severity::Error     ? "214, 39, 40"
                        : severity == Severity::Warning ? "230, 160, 0"
                                                        : "127, 127, 127";
    label->setProperty("severity", int(severity));
    label->setStyleSheet(QStringLiteral("QLabel { background: rgba(%1, 40); border-left: 4px solid rgb(%1); "
                                        "padding: 4px 8px; }")
                             .arg(QLatin1String(color)));
    setVisible(true);
}

void BannerBar::removeBanner(const QString &key)
{
    delete m_banners.take(key);
    setVisible(!m_banners.isEmpty());
}

void BannerBar::removeBannersStartingWith(const QString &prefix)
{
    const auto keys = m_banners.keys();
    for (const auto &key : keys) {
        if (key.startsWith(prefix))
            delete m_banners.take(key);
    }
    setVisible(!m_banners.isEmpty());
}

} // namespace accel::app
