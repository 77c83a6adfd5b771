// libi2c (Debian libi2c-dev): SMBus helpers. They return a negative errno on
// failure and do NOT set errno. linux/i2c-dev.h: I2C_SLAVE, I2C_FUNCS, I2C_RDWR.
#include <linux/i2c.h>
#include <linux/i2c-dev.h>
#include <i2c/smbus.h>
