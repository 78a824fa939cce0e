// A small line diff (longest common subsequence) for "review changes before saving".
#pragma once

#include <QString>
#include <QStringList>
#include <QVector>

namespace accel::app {

struct DiffLine {
    enum class Kind { Same, Removed, Added };
    Kind kind = Kind::Same;
    QString text;
};

QVector<DiffLine> diffLines(const QString &before, const QString &after);
// Unified-style text: "  same", "- removed", "+ added".
QString formatDiff(const QVector<DiffLine> &diff);

} // namespace accel::app
