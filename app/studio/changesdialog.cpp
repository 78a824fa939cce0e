#include "app/studio/changesdialog.h"

#include "app/studio/textdiff.h"

#include <QCheckBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QLabel>
#include <QPushButton>
#include <QTextEdit>
#include <QVBoxLayout>

namespace accel::app {

ChangesReview showChangesDialog(QWidget *parent, const QString &before, const QString &after, const QString &caption,
                                const QString &acceptText, bool modified, bool reviewBeforeSave)
{
    const QVector<DiffLine> diff = diffLines(before, after);
    QString html = QStringLiteral("<pre style=\"margin:0\">");
    for (const DiffLine &line : diff) {
        const QString escaped = line.text.toHtmlEscaped();
        switch (line.kind) {
        case DiffLine::Kind::Same:
            html += QStringLiteral("  ") + escaped + QLatin1Char('\n');
            break;
        case DiffLine::Kind::Removed:
            html += QStringLiteral("<span style=\"background:#fbe3e3;color:#8e1b1b\">- %1</span>\n").arg(escaped);
            break;
        case DiffLine::Kind::Added:
            html += QStringLiteral("<span style=\"background:#e3f4e3;color:#1b5e20\">+ %1</span>\n").arg(escaped);
            break;
        }
    }
    html += QStringLiteral("</pre>");
    QDialog dialog(parent);
    dialog.setWindowTitle(modified ? QDialog::tr("Changes to save") : QDialog::tr("No changes"));
    dialog.resize(640, 520);
    auto *layout = new QVBoxLayout(&dialog);
    layout->addWidget(new QLabel(caption, &dialog));
    auto *view = new QTextEdit(&dialog);
    view->setReadOnly(true);
    view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    view->setHtml(html);
    layout->addWidget(view, 1);
    auto *review = new QCheckBox(QDialog::tr("Always show the changes before saving"), &dialog);
    review->setChecked(reviewBeforeSave);
    layout->addWidget(review);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, &dialog);
    QPushButton *accept = buttons->addButton(acceptText, QDialogButtonBox::AcceptRole);
    accept->setEnabled(modified);
    accept->setDefault(true);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    const bool accepted = dialog.exec() == QDialog::Accepted;
    return {accepted, review->isChecked()};
}

} // namespace accel::app
