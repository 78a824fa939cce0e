#include "app/studio/configtextpatch.h"

#include <QList>
#include <QRegularExpression>
#include <QStringList>

#include <algorithm>

namespace accel::app {

namespace {

// One key of a block mapping: its line, the lines of its nested block, and its children when
// the block is itself a mapping. `end` is exclusive and includes comment lines inside the block.
struct Node {
    QString key;
    int line = 0;
    int end = 0;
    int indent = 0;
    QString value; // the scalar after "key:", inline comment removed; empty for a block
    QList<Node> children;
    bool listBlock = false; // "key:" followed by "- item" lines (compared as text)
};

bool isBlankOrComment(const QString &line)
{
    const QString trimmed = line.trimmed();
    return trimmed.isEmpty() || trimmed.startsWith(QLatin1Char('#'));
}

int indentOf(const QString &line)
{
    int i = 0;
    while (i < line.size() && line.at(i) == QLatin1Char(' '))
        ++i;
    return i;
}

// The value part of "key: value  # comment": where the value starts and where it ends (before
// an inline comment, quotes respected).
void valueSpan(const QString &line, int colon, int &begin, int &end)
{
    begin = colon + 1;
    while (begin < line.size() && line.at(begin) == QLatin1Char(' '))
        ++begin;
    end = line.size();
    QChar quote;
    for (int i = begin; i < line.size(); ++i) {
        const QChar c = line.at(i);
        if (!quote.isNull()) {
            if (c == quote)
                quote = QChar();
        } else if ((c == QLatin1Char('\'') || c == QLatin1Char('"')) && i == begin) {
            quote = c;
        } else if (c == QLatin1Char('#') && i > 0 && line.at(i - 1) == QLatin1Char(' ')) {
            end = i;
            break;
        }
    }
    while (end > begin && line.at(end - 1) == QLatin1Char(' '))
        --end;
}

const QRegularExpression &keyLine()
{
    static const QRegularExpression expression(QStringLiteral("^( *)([A-Za-z0-9_.\\-]+):(?: |$)"));
    return expression;
}

// Parses the mapping whose keys sit at `indent` from line `from` up to `to`; false when a line
// is not one this simple block-YAML reader knows.
bool parseMapping(const QStringList &lines, int from, int to, int indent, QList<Node> &out)
{
    int i = from;
    while (i < to) {
        if (isBlankOrComment(lines[i])) {
            ++i;
            continue;
        }
        const auto match = keyLine().match(lines[i]);
        if (!match.hasMatch() || match.capturedLength(1) != indent)
            return false;
        Node node;
        node.key = match.captured(2);
        node.line = i;
        node.indent = indent;
        int begin = 0, end = 0;
        valueSpan(lines[i], match.capturedEnd(2), begin, end);
        node.value = lines[i].mid(begin, end - begin);
        if (node.value.startsWith(QLatin1Char('&')) || node.value.startsWith(QLatin1Char('*')) ||
            node.value == QLatin1String("|") || node.value == QLatin1String(">") ||
            (node.value.startsWith(QLatin1Char('{')) && node.value != QLatin1String("{}")))
            return false; // anchors, aliases, block scalars, flow mappings: not ours to patch
        int j = i + 1;
        int childIndent = -1;
        while (j < to) {
            if (isBlankOrComment(lines[j])) {
                ++j;
                continue;
            }
            const int lineIndent = indentOf(lines[j]);
            const bool listItem = lines[j].mid(lineIndent).startsWith(QLatin1String("- ")) ||
                                  lines[j].mid(lineIndent) == QLatin1String("-");
            if (lineIndent > indent || (lineIndent == indent && listItem && node.value.isEmpty())) {
                if (childIndent < 0)
                    childIndent = lineIndent;
                node.listBlock = node.listBlock || listItem;
                ++j;
                continue;
            }
            break;
        }
        // Comment lines after the last child belong to whatever follows.
        int last = j;
        while (last > i + 1 && isBlankOrComment(lines[last - 1]))
            --last;
        node.end = last;
        if (childIndent >= 0 && !node.value.isEmpty())
            return false; // a value continued on the next lines
        if (childIndent >= 0 && !node.listBlock && !parseMapping(lines, i + 1, last, childIndent, node.children))
            return false;
        out.append(node);
        i = j;
    }
    return true;
}

const Node *find(const QList<Node> &nodes, const QString &key)
{
    for (const Node &node : nodes) {
        if (node.key == key)
            return &node;
    }
    return nullptr;
}

// The node's text with indentation removed relative to the node, for equality.
QString nodeText(const QStringList &lines, const Node &node)
{
    QStringList out;
    for (int i = node.line; i < node.end; ++i) {
        if (!isBlankOrComment(lines[i]))
            out.append(lines[i].mid(std::min(node.indent, indentOf(lines[i]))));
    }
    return out.join(QLatin1Char('\n'));
}

QStringList reindented(const QStringList &lines, const Node &node, int indent)
{
    QStringList out;
    const QString pad(indent, QLatin1Char(' '));
    for (int i = node.line; i < node.end; ++i)
        out.append(pad + lines[i].mid(std::min(node.indent, indentOf(lines[i]))));
    return out;
}

// Whether every key of the file is one the writer writes too. A legacy key the loader renamed
// (fp16: true -> mixed_precision) would otherwise survive beside its replacement.
bool keysKnown(const QList<Node> &original, const QList<Node> &before)
{
    for (const Node &node : original) {
        const Node *known = find(before, node.key);
        if (!known)
            return false;
        if (!node.children.isEmpty() && !known->children.isEmpty() && !keysKnown(node.children, known->children))
            return false;
    }
    return true;
}

struct Edit {
    int from; // replaced lines [from, to); from == to inserts
    int to;
    QStringList lines;
};

class Patcher {
public:
    Patcher(const QStringList &original, const QStringList &before, const QStringList &after)
        : m_original(original), m_before(before), m_after(after)
    {}

    void patch(const QList<Node> &original, const QList<Node> &before, const QList<Node> &after, int indent,
               int appendAt)
    {
        for (const Node &wanted : after) {
            const Node *was = find(before, wanted.key);
            const Node *there = find(original, wanted.key);
            if (was && nodeText(m_before, *was) == nodeText(m_after, wanted))
                continue; // unchanged: the file keeps whatever it had (or did not spell out)
            if (!there) {
                insert(original, wanted, indent, appendAt);
            } else if (was && !wanted.children.isEmpty() && !there->children.isEmpty()) {
                patch(there->children, was->children, wanted.children, there->children.first().indent, there->end);
            } else if (wanted.children.isEmpty() && !wanted.listBlock && there->children.isEmpty() &&
                       !there->listBlock && there->end == there->line + 1) {
                // A scalar: replace the value only, keeping an inline comment.
                const QString &line = m_original[there->line];
                const auto match = keyLine().match(line);
                int begin = 0, end = 0;
                valueSpan(line, match.capturedEnd(2), begin, end);
                QString changed = line.left(begin) + wanted.value + line.mid(end);
                if (begin == line.size()) // "key:" with nothing after it
                    changed = line + QLatin1Char(' ') + wanted.value;
                m_edits.append({there->line, there->line + 1, {changed}});
            } else {
                m_edits.append({there->line, there->end, reindented(m_after, wanted, there->indent)});
            }
        }
        for (const Node &gone : before) {
            if (find(after, gone.key))
                continue;
            if (const Node *there = find(original, gone.key))
                m_edits.append({there->line, there->end, {}});
        }
    }

    QString result(bool endsWithNewline) const
    {
        QStringList lines = m_original;
        QList<Edit> edits = m_edits;
        // From the bottom up; at one line, what is removed there goes before what is inserted there
        // (a key replaced by one that sorts just before it: the new line must not be removed).
        std::stable_sort(edits.begin(), edits.end(), [](const Edit &a, const Edit &b) {
            return a.from != b.from ? a.from > b.from : (a.to - a.from) > (b.to - b.from);
        });
        for (const Edit &edit : edits) {
            for (int i = edit.to - 1; i >= edit.from; --i)
                lines.removeAt(i);
            for (int i = 0; i < edit.lines.size(); ++i)
                lines.insert(edit.from + i, edit.lines[i]);
        }
        QString text = lines.join(QLatin1Char('\n'));
        if (endsWithNewline || !m_edits.isEmpty())
            text += QLatin1Char('\n');
        return text;
    }

private:
    // A new key goes before the first sibling that sorts after it (the writer's order), above the
    // comment lines that introduce that sibling; else after the last sibling.
    void insert(const QList<Node> &siblings, const Node &wanted, int indent, int appendAt)
    {
        int at = appendAt;
        for (const Node &sibling : siblings) {
            if (sibling.key > wanted.key) {
                at = sibling.line;
                while (at > 0 && m_original[at - 1].trimmed().startsWith(QLatin1Char('#')) &&
                       indentOf(m_original[at - 1]) == sibling.indent)
                    --at;
                break;
            }
        }
        m_edits.append({at, at, reindented(m_after, wanted, indent)});
    }

    const QStringList &m_original;
    const QStringList &m_before;
    const QStringList &m_after;
    QList<Edit> m_edits;
};

QStringList splitLines(const QString &text)
{
    QStringList lines = text.split(QLatin1Char('\n'));
    if (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    return lines;
}

} // namespace

std::optional<QString> patchConfigText(const QString &original, const QString &before, const QString &after)
{
    if (before == after)
        return original;
    if (original.contains(QLatin1Char('\r')) || original.contains(QLatin1Char('\t')))
        return std::nullopt;
    const QStringList originalLines = splitLines(original);
    const QStringList beforeLines = splitLines(before);
    const QStringList afterLines = splitLines(after);
    QList<Node> originalNodes, beforeNodes, afterNodes;
    if (!parseMapping(originalLines, 0, int(originalLines.size()), 0, originalNodes) ||
        !parseMapping(beforeLines, 0, int(beforeLines.size()), 0, beforeNodes) ||
        !parseMapping(afterLines, 0, int(afterLines.size()), 0, afterNodes))
        return std::nullopt;
    if (originalNodes.isEmpty() && !original.trimmed().isEmpty())
        return std::nullopt; // e.g. JSON text in a .yaml file
    if (!keysKnown(originalNodes, beforeNodes))
        return std::nullopt;
    Patcher patcher(originalLines, beforeLines, afterLines);
    // Top-level keys appended at the end go after the last key's block, before trailing comments.
    int appendAt = int(originalLines.size());
    patcher.patch(originalNodes, beforeNodes, afterNodes, 0, appendAt);
    return patcher.result(original.endsWith(QLatin1Char('\n')));
}

} // namespace accel::app
