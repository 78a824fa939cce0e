// qcustomplot.h uses Qt's lower-case keywords (signals, slots, emit, foreach), which the project
// switches off (QT_NO_KEYWORDS). Include it through this header: it maps them for the duration.
#pragma once

#include <QtGlobal>

#ifndef signals
#define signals Q_SIGNALS
#define ACCEL_QCP_UNDEF_SIGNALS
#endif
#ifndef slots
#define slots Q_SLOTS
#define ACCEL_QCP_UNDEF_SLOTS
#endif
#ifndef emit
#define emit Q_EMIT
#define ACCEL_QCP_UNDEF_EMIT
#endif
#ifndef foreach
#define foreach Q_FOREACH
#define ACCEL_QCP_UNDEF_FOREACH
#endif

#include <qcustomplot.h>

#ifdef ACCEL_QCP_UNDEF_SIGNALS
#undef signals
#undef ACCEL_QCP_UNDEF_SIGNALS
#endif
#ifdef ACCEL_QCP_UNDEF_SLOTS
#undef slots
#undef ACCEL_QCP_UNDEF_SLOTS
#endif
#ifdef ACCEL_QCP_UNDEF_EMIT
#undef emit
#undef ACCEL_QCP_UNDEF_EMIT
#endif
#ifdef ACCEL_QCP_UNDEF_FOREACH
#undef foreach
#undef ACCEL_QCP_UNDEF_FOREACH
#endif
