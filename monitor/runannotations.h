// What people add to a run after it started: a display name, notes and tags, kept in the run
// directory's annotations.json (core/rundir's file::Annotations; docs/run-directory.md). run.json
// stays the supervisor's alone, so renaming a live run never races with it: the studio and
// `accel runs rename/notes/tag` write this file (private, replaced atomically, never through a
// symlink), and every reader shows the display name in place of run.json's name.
#pragma once

#include "core/common/result.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace accel::monitor {

struct RunAnnotations {
    QString displayName; // empty: run.json's name
    QString notes;
    QStringList tags; // each checked by checkTag(), no duplicates, in the order they were added

    bool isEmpty() const { return displayName.isEmpty() && notes.isEmpty() && tags.isEmpty(); }
    bool operator==(const RunAnnotations &other) const
    {
        return displayName == other.displayName && notes == other.notes && tags == other.tags;
    }
};

// The file's JSON: {"schema":"accel.run-annotations","version":1,"display_name":..,"notes":..,"tags":[..]}.
QJsonObject annotationsToJson(const RunAnnotations &annotations);
// Reads the keys above from an object (an annotations file or an `accel runs --json` entry);
// unknown keys are ignored, tags that checkTag() refuses are dropped.
RunAnnotations annotationsFromJson(const QJsonObject &object);

// A run without the file has empty annotations. A file of a newer version, or one that is not a
// JSON object, is an error naming it.
Result<RunAnnotations> readRunAnnotations(const QString &runDirectory);
// Replaces the file (an empty RunAnnotations still writes one, so a rename back is kept).
Result<void> writeRunAnnotations(const QString &runDirectory, const RunAnnotations &annotations);

// The tag trimmed, or an error saying why it cannot be one: empty, longer than 64 characters, or
// holding a comma or a line break (tags are typed as "a, b" lists).
Result<QString> checkTag(const QString &tag);
// Names and notes: trimmed; a display name is one line of at most 200 characters.
Result<QString> checkDisplayName(const QString &name);
// "a, b, c" -> tags, each checked; the first bad one is the error.
Result<QStringList> parseTagList(const QString &text);

} // namespace accel::monitor
