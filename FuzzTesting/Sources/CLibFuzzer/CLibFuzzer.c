// Declarations only (include/CLibFuzzer.h); the driver is libFuzzer's.
#include "CLibFuzzer.h"
