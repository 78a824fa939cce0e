#include "core/worker/blasrestart.h"

#include "core/hardware/blasprobe.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace accel::worker {

void restartWithBetterBlasKernels(char **argv)
{
    if (std::getenv("OPENBLAS_CORETYPE"))
        return;
    if (const char *mode = std::getenv("ACCEL_BLAS_CORETYPE"); mode && std::strcmp(mode, "keep") == 0)
        return;
    const hardware::BlasReport blas = hardware::probeBlas(hardware::runningCpuFlags());
    if (blas.recommended.empty())
        return;
    // One line from the first rank (or a worker outside a launch), not from every rank.
    const char *rank = std::getenv("RANK");
    if (!rank || std::strcmp(rank, "0") == 0)
        std::cerr << "accel-worker: " << blas.reason << "; restarting with it (ACCEL_BLAS_CORETYPE=keep keeps "
                  << blas.coreName << ")" << std::endl;
    setenv("OPENBLAS_CORETYPE", blas.recommended.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::cerr << "accel-worker: could not restart (" << std::strerror(errno) << "); running with " << blas.coreName
              << " kernels" << std::endl;
}

} // namespace accel::worker
