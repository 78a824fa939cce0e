// GroupReaper: a tiny helper process forked by the supervisor that outlives it, in a process group
// of its own (so a SIGKILL to the supervisor's process group does not reach it). The supervisor
// tells it each rank's process group over a pipe; if the supervisor dies without saying goodbye
// (kill -9), the pipe reaches EOF and the helper SIGKILLs those groups, so processes the ranks
// forked do not survive either (the ranks themselves die through PR_SET_PDEATHSIG).
#pragma once

#include <QtGlobal>

namespace accel::launcher {

class GroupReaper {
public:
    GroupReaper();
    ~GroupReaper(); // a clean goodbye: the helper exits without killing anything
    GroupReaper(const GroupReaper &) = delete;
    GroupReaper &operator=(const GroupReaper &) = delete;

    bool isRunning() const { return m_helper > 0; }
    qint64 helperPid() const { return m_helper; }
    void watch(qint64 processGroup);

private:
    int m_pipe = -1;
    qint64 m_helper = 0;
};

} // namespace accel::launcher
