// GroupReaper: a tiny helper process forked by the supervisor that outlives it, in a process group
// of its own (so a SIGKILL to the supervisor's process group does not reach it). The supervisor
// tells it each rank's process group over a pipe; if the supervisor dies without saying goodbye
// (kill -9), the pipe reaches EOF and the helper SIGKILLs those groups, so processes the ranks
// forked do not survive either (the ranks themselves die through PR_SET_PDEATHSIG).
// A process that left its rank's process group and session (its own setsid()) is in none of those
// groups: every rank carries the run's random token in its environment (kRunTokenVariable), which
// its descendants inherit, and the helper also kills every process of its own user whose initial
// environment holds that token.
#pragma once

#include "core/common/runtoken.h"

#include <QtGlobal>

#include <string>

namespace accel::launcher {

using accel::kRunTokenVariable; // the environment variable every rank gets: the run's token

// A fresh token for kRunTokenVariable (128 random bits).
std::string newRunToken();

class GroupReaper {
public:
    // token: the value of kRunTokenVariable the run's ranks carry (empty: no environment sweep).
    explicit GroupReaper(const std::string &token = {});
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
