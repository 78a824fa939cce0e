// Texts of the Monitor that follow rules, apart from its widgets: the names runs have in legends
// and "Details for", and why a run has no chart yet.
#pragma once

#include <QHash>
#include <QString>
#include <QStringList>

namespace accel::app {

// One name per run address: the name given in `names` (the Runs page's display names), else a
// local run's display name (annotations, else run.json's name) or a remote run's "FOLDER on HOST";
// runs of the same name get their id's last part ("train · 3fa2").
QStringList runLabels(const QStringList &addresses, const QHash<QString, QString> &names);

// Why a run shows no chart, from its recorded state, whether it printed anything, and whether its
// output is read for metrics: "crash failed before it logged a metric: ...", "Waiting for ...".
QString whyNoMetrics(const QString &label, const QString &state, bool printed, bool readingOutput);

} // namespace accel::app
