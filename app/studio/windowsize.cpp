#include "app/studio/windowsize.h"

#include <algorithm>

namespace accel::app {

QSize defaultWindowSize(const QSize &availableScreen)
{
    const QSize smallest(1024, 700);
    const QSize largest(1600, 1000);
    QSize size(availableScreen.width() * 9 / 10, availableScreen.height() * 9 / 10);
    size = size.expandedTo(smallest).boundedTo(largest);
    if (availableScreen.isValid())
        size = size.boundedTo(availableScreen);
    return size;
}

} // namespace accel::app
