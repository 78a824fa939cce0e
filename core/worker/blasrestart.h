// Restarts accel-worker once with OPENBLAS_CORETYPE set when OpenBLAS chose kernels below what the
// CPU runs (see core/hardware/blasprobe.h). OpenBLAS reads the variable only while it loads, so the
// process has to start again; exec keeps the pid, so launchers and supervisors do not notice.
#pragma once

namespace accel::worker {

// Returns only when no restart is needed or exec failed. Skipped when OPENBLAS_CORETYPE is already
// set (by the user, or by the first start) or ACCEL_BLAS_CORETYPE=keep.
void restartWithBetterBlasKernels(char **argv);

} // namespace accel::worker
