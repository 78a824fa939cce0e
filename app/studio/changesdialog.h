// The Configure page's "changes to save" dialog: the line diff between the file on disk and the
// text a save would write, with the "always show the changes before saving" choice.
#pragma once

#include <QString>

class QWidget;

namespace accel::app {

struct ChangesReview {
    bool accepted = false;
    bool reviewBeforeSave = true; // the checkbox as the user left it
};

// Modal. `modified`: whether there is anything to save (the accept button is disabled otherwise).
ChangesReview showChangesDialog(QWidget *parent, const QString &before, const QString &after, const QString &caption,
                                const QString &acceptText, bool modified, bool reviewBeforeSave);

} // namespace accel::app
