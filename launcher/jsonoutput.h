// JSON documents whose first keys are "schema" and "version" (QJsonDocument sorts keys, so the
// header is written by hand in front of the sorted body). Every --json output and run.json use it.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace accel::launcher {

// `accel launch --detach --json`'s reply (cmd_launch_support.cpp writes it; accel hosts launch and
// the studio's Launch page read it): {"schema","version","id","run_dir","supervisor_pid"}.
inline constexpr const char *LaunchDetachedSchema = "accel.launch-detached";
inline constexpr int LaunchDetachedVersion = 1;
// `accel preview-data JOB --json` (cmd_preview_data.cpp; read by the studio's data preview).
inline constexpr const char *DataPreviewSchema = "accel.data-preview";
// `accel bench fp8 --json`: the result, and each progress line before it (cmd_bench.cpp; read by
// the studio's FP8 comparison).
inline constexpr const char *BenchFp8Schema = "accel.bench-fp8";
inline constexpr const char *BenchFp8ProgressSchema = "accel.bench-fp8.progress";
inline constexpr int BenchFp8Version = 1;
// accel hosts / slurm --json reports, each name with its version (app/cli/cmd_hosts*.cpp,
// cmd_slurm*.cpp write them, the studio's Cluster page reads them).
inline constexpr const char *HostsCheckSchema = "accel.hosts-check";
inline constexpr int HostsCheckVersion = 1;
inline constexpr const char *HostsDoctorSchema = "accel.doctor";
inline constexpr int HostsDoctorVersion = 1;
inline constexpr const char *HostsLaunchSchema = "accel.hosts-launch";
inline constexpr int HostsLaunchVersion = 1;
inline constexpr const char *HostsStopSchema = "accel.hosts-stop";
inline constexpr int HostsStopVersion = 1;
inline constexpr const char *HostsInstallSchema = "accel.hosts-install";
inline constexpr int HostsInstallVersion = 1;
inline constexpr const char *NetProbeSchema = "accel.net-probe"; // accel hosts net-listen / net-send
inline constexpr int NetProbeVersion = 1;
inline constexpr const char *SlurmSubmitSchema = "accel.slurm-submit";
inline constexpr int SlurmSubmitVersion = 1;
inline constexpr const char *SlurmQueueSchema = "accel.slurm-queue";
inline constexpr int SlurmQueueVersion = 1;
inline constexpr const char *SlurmCancelSchema = "accel.slurm-cancel";
inline constexpr int SlurmCancelVersion = 1;

// `body` must not contain "schema" or "version" (they are dropped if it does).
QByteArray schemaJson(const QString &schema, int version, QJsonObject body, bool compact = false);
// Same, taking "schema" and "version" from `document` itself.
QByteArray schemaJson(const QJsonObject &document, bool compact = false);

} // namespace accel::launcher
