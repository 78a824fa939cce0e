#include "app/studio/textdiff.h"

#include <vector>

namespace accel::app {

QVector<DiffLine> diffLines(const QString &before, const QString &after)
{
    const QStringList a = before.split(QLatin1Char('\n'));
    const QStringList b = after.split(QLatin1Char('\n'));
    const int n = static_cast<int>(a.size());
    const int m = static_cast<int>(b.size());
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..]. Config files are
    // a few hundred lines at most, so the quadratic table is small.
    std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
    for (int i = n - 1; i >= 0; --i) {
        for (int j = m - 1; j >= 0; --j)
            lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
    QVector<DiffLine> result;
    int i = 0;
    int j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && a[i] == b[j]) {
            result.append({DiffLine::Kind::Same, a[i]});
            ++i;
            ++j;
        } else if (j < m && (i == n || lcs[i][j + 1] > lcs[i + 1][j])) {
            result.append({DiffLine::Kind::Added, b[j]});
            ++j;
        } else {
            result.append({DiffLine::Kind::Removed, a[i]});
            ++i;
        }
    }
    // Both texts normally end in "\n", which leaves one empty trailing entry; drop it.
    if (!result.isEmpty() && result.last().kind == DiffLine::Kind::Same && result.last().text.isEmpty())
        result.removeLast();
    return result;
}

QString formatDiff(const QVector<DiffLine> &diff)
{
    QString text;
    for (const DiffLine &line : diff) {
        switch (line.kind) {
        case DiffLine::Kind::Same:
            text += QStringLiteral("  ");
            break;
        case DiffLine::Kind::Removed:
            text += QStringLiteral("- ");
            break;
        case DiffLine::Kind::Added:
            text += QStringLiteral("+ ");
            break;
        }
        text += line.text + QLatin1Char('\n');
    }
    return text;
}

} // namespace accel::app
