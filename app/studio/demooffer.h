// DemoOffer: the strip a first start shows above the pages: what the demo is, "Try the demo" and
// "Not now". Either answer is remembered, so the offer appears once per user.
#pragma once

#include <QFrame>

namespace accel::app {

class DemoOffer : public QFrame {
    Q_OBJECT
public:
    explicit DemoOffer(QWidget *parent = nullptr);

    // Whether this user has not answered the offer yet (QSettings).
    static bool isPending();
    static void setAnswered();

Q_SIGNALS:
    void accepted();
    void dismissed();
};

} // namespace accel::app
