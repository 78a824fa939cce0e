// A page that a later version of the studio fills in: it says so plainly and shows no data.
#pragma once

#include <QWidget>

namespace accel::app {

class PlaceholderPage : public QWidget {
    Q_OBJECT
public:
    PlaceholderPage(const QString &title, const QString &description, QWidget *parent = nullptr);
};

} // namespace accel::app
