// QCOMPARE on libtorch dtypes. Comparing two c10::ScalarType values directly is unsafe: when they
// differ, QTest prints them with toString(), argument-dependent lookup finds c10::toString
// (ScalarType), which returns a static string, and QTest then deletes that string: the test aborts
// with "free(): invalid pointer" instead of reporting the failure. Compare the names instead.
#pragma once

#include <QString>

#include <c10/core/ScalarType.h>

namespace accel::test {

inline QString dtypeName(c10::ScalarType type)
{
    return QString::fromLatin1(c10::toString(type));
}

} // namespace accel::test
