#include "app/studio/placeholderpage.h"

#include <QLabel>
#include <QVBoxLayout>

namespace accel::app {

PlaceholderPage::PlaceholderPage(const QString &title, const QString &description, QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->addStretch(1);
    auto *heading = new QLabel(QStringLiteral("<h2>%1</h2>").arg(title.toHtmlEscaped()), this);
    heading->setAlignment(Qt::AlignCenter);
    layout->addWidget(heading);
    auto *text = new QLabel(
        description + QStringLiteral("\n\n") + tr("This page is coming in a later version of Accel Studio."), this);
    text->setObjectName(QStringLiteral("placeholderText"));
    text->setAlignment(Qt::AlignCenter);
    text->setWordWrap(true);
    layout->addWidget(text);
    layout->addStretch(2);
}

} // namespace accel::app
