// A run's hyperparameters, flat: "config/<key>" from hparams.json (what a script passed to the
// tracker's init_trackers(config=...)), "job/<key>" from job.yaml and "cluster/<key>" from
// cluster.yaml (the Accelerate config the launch used), nested keys joined with '.'
// ("cluster/fsdp_config.fsdp_sharding_strategy"). The values are the files' texts ("0.0003",
// "true", "[1, 2]"); numbers() reads those that are numbers, for sorting and filters.
// differingKeys() is the diff between runs.
#pragma once

#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

namespace accel::monitor {

using Hyperparameters = QMap<QString, QString>; // sorted by key

// Missing files give nothing; a file that cannot be read or parsed adds a line to `problems`
// naming it (the others are still read).
Hyperparameters readHyperparameters(const QString &runDirectory, QStringList *problems = nullptr);
// From the texts of the three files (empty: absent); `problems` as above.
Hyperparameters hyperparametersFromTexts(const QByteArray &trackerConfigJson, const QByteArray &jobYaml,
                                         const QByteArray &clusterYaml, QStringList *problems = nullptr);

// The value as a number when the whole text is one ("3e-4", "12", "true" is not), else NaN.
double hyperparameterNumber(const QString &text);

// The keys whose values are not the same in every run (a key that some runs lack differs), sorted.
QStringList differingKeys(const QList<Hyperparameters> &runs);

} // namespace accel::monitor
