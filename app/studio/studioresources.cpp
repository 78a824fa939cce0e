#include "app/studio/studioresources.h"

#include <QtGlobal>

// Q_INIT_RESOURCE must be used outside of any namespace.
static void initStudioQrc()
{
    Q_INIT_RESOURCE(studio);
}

namespace accel::app {

void initStudioResources()
{
    static const bool done = [] {
        initStudioQrc();
        return true;
    }();
    Q_UNUSED(done);
}

} // namespace accel::app
