#include "app/studio/demooffer.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>

namespace accel::app {

namespace {
const QString kAnsweredKey = QStringLiteral("firstStart/demoOfferAnswered");
}

DemoOffer::DemoOffer(QWidget *parent) : QFrame(parent)
{
    setObjectName(QStringLiteral("demoOffer"));
    setStyleSheet(QStringLiteral("QFrame#demoOffer { border-left: 4px solid palette(highlight); "
                                 "background: palette(alternate-base); }"));
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 6, 10, 6);
    auto *text = new QLabel(tr("<b>New here?</b> Try the demo: a small GPT trained by two CPU ranks on this machine "
                               "(about a minute), followed live on the Runs page."),
                            this);
    text->setWordWrap(true);
    auto *tryIt = new QPushButton(tr("Try the demo"), this);
    tryIt->setObjectName(QStringLiteral("tryDemo"));
    tryIt->setDefault(true);
    auto *notNow = new QPushButton(tr("Not now"), this);
    notNow->setObjectName(QStringLiteral("notNow"));
    layout->addWidget(text, 1);
    layout->addWidget(tryIt);
    layout->addWidget(notNow);
    connect(tryIt, &QPushButton::clicked, this, [this] {
        setAnswered();
        hide();
        Q_EMIT accepted();
    });
    connect(notNow, &QPushButton::clicked, this, [this] {
        setAnswered();
        hide();
        Q_EMIT dismissed();
    });
}

bool DemoOffer::isPending()
{
    return !QSettings().value(kAnsweredKey, false).toBool();
}

void DemoOffer::setAnswered()
{
    QSettings().setValue(kAnsweredKey, true);
}

} // namespace accel::app
