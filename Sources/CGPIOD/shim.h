// libgpiod 1.6 API (Debian 12 libgpiod-dev). The 2.x API is incompatible;
// all use of it stays behind EdgeBus/GPIO/LibgpiodLine.swift.
#include <gpiod.h>
