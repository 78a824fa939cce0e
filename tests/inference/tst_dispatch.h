// tst_dispatch's test class. Its tests are in two sources: tst_dispatch.cpp (zero-copy views,
// device-map dispatch and offload, the decode settings) and tst_dispatchkernels.cpp (the decode
// products: their split over the threads, and each kernel against the exact product at every
// instruction set this CPU runs, and the int8 kernel's choice).
#pragma once

#include "core/hardware/procparsers.h"
#include "core/inference/inferencemodel.h"

#include <ATen/ATen.h>

#include <QObject>
#include <QTemporaryDir>

#include <string>
#include <vector>

class tst_Dispatch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void viewsShareTheMapping_data();
    void viewsShareTheMapping();
    void viewOutlivesCheckpoint();
    void cpuModelIsZeroCopy();
    void residentWeightsAreMappedAtLoad();
    void diskOffloadMatchesInMemory_data();
    void diskOffloadMatchesInMemory();
    void offloadFolderRoundTrip();
    void badDeviceMapsAreNamed();
    void plannedKeysThatHoldNoWeightPlaceNothing();
    void gpusRunOnTheCpuWhenAsked();
    void shapeMismatchNamesTensor();
    void gpuNeedsCuda();
    // Decode settings (decodebound.h): bfloat16 chosen by measurement, pinned threads.
    void bfloat16ByMeasurement();
    void pinnedThreadsRunOnTheirCpus();
    void memoryBandwidthIsReadOnTheDecodeThreads();
    void promptRowsChosenByMeasurement();
    // Decode products (tst_dispatchkernels.cpp: int8gemv.h, floatgemv.h, bf16gemv.h, gemvcolumns.h,
    // int8kernel.h): each kernel at every ISA this CPU runs, the work split over the intra-op
    // threads, and the int8 kernel chosen by capability and measurement.
    void piecesRunOnTheIntraOpThreads();
    void int8KernelEqualsTheDequantizedProduct();
    void floatKernelEqualsTheExactProduct();
    void bf16KernelEqualsTheExactProduct();
    void bf16DecodeMatchesLibtorchLinear();
    void columnKernelEqualsTheExactProduct();
    void gpt2DecodeTakesTheColumnProduct();
    void bf16ColumnKernelEqualsTheExactProduct();
    void bf16Gpt2DecodeMatchesLibtorchAddmm();
    void sharedPiecesDoNotWaitForAHeldHelper();
    void sharedPiecesHelpersSleepOutsideTheirSpin();
    void newHelpersTakeTheFirstProduct();
    void int8KernelChosenByFlagsAndMeasurement();

private:
    static at::Tensor logitsOf(accel::inference::InferenceModel &model, const at::Tensor &ids);
    QTemporaryDir m_dir;
};

namespace accel::test {

// /proc/cpuinfo of two CPUs through the real parser: one with avx512_bf16 (Sapphire Rapids also has
// amx_bf16), one without either.
inline std::vector<std::string> cpuFlags(const std::string &flags)
{
    const std::string text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\nphysical id\t: 0\n"
                             "core id\t\t: 0\ncpu cores\t: 1\nflags\t\t: fpu sse2 avx avx2 fma " +
                             flags + "\n\n";
    return hardware::parseCpuInfo(text).flags;
}

} // namespace accel::test
