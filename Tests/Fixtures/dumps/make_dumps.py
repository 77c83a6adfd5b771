# Writes register dumps in i2cdump's default (byte) format.
import sys
def dump(regs, path):
    # regs: dict reg -> int or 'XX'
    lines = ["     0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f    0123456789abcdef"]
    for base in range(0, 256, 16):
        cells, ascii_ = [], ""
        for i in range(16):
            v = regs.get(base + i, 0)
            if v == 'XX':
                cells.append("XX"); ascii_ += "X"
            else:
                cells.append("%02x" % v)
                ascii_ += "." if v in (0, 0xff) else ("?" if v < 32 or v >= 127 else chr(v))
        lines.append("%02x: %s    %s" % (base, " ".join(cells), ascii_))
    open(path, "w").write("\n".join(lines) + "\n")

def be(v): v &= 0xffff; return [v >> 8, v & 0xff]
def le(v): v &= 0xffff; return [v & 0xff, v >> 8]
def put(r, start, bs):
    for i, b in enumerate(bs): r[start + i] = b

# BMP280, data sheet worked example
r = {}
cal = []
for v in [27504, 26435, -1000, 36477, -10685, 3024, 2855, 140, -7, 15500, -14600, 6000]: cal += le(v)
put(r, 0x88, cal)
r[0xD0] = 0x58; r[0xF4] = 0x57; r[0xF5] = 0x10
put(r, 0xF7, [0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00])   # adc_P 415148, adc_T 519888
dump(r, "bmp280-worked-example.txt")
r2 = dict(r)
for reg in list(range(0x00, 0x88)) + [0xA0, 0xA1, 0xE0, 0xF3, 0xFD, 0xFE, 0xFF]: r2[reg] = 'XX'
dump(r2, "bmp280-xx-unused.txt")
r3 = dict(r); r3[0x8E] = 'XX'   # dig_P1 LSB
dump(r3, "bmp280-xx-calibration.txt")

# MPU-6050 flat and still: ±2 g, ±250 °/s, DLPF 44 Hz, 100 Hz
m = {0x75: 0x68, 0x6B: 0x01, 0x19: 9, 0x1A: 3, 0x1B: 0x00, 0x1C: 0x00}
put(m, 0x3B, be(-164) + be(82) + be(16384) + be(-521) + be(131) + be(-66) + be(0))
dump(m, "mpu6050-at-rest.txt")
m2 = dict(m); m2[0x1B] = 0x18; m2[0x1C] = 0x08   # ±2000 °/s, ±4 g: same raw, other scale
dump(m2, "mpu6050-2000dps-4g.txt")
m3 = dict(m); m3[0x3F] = 'XX'   # ACCEL_ZOUT_H unreadable
dump(m3, "mpu6050-xx-accel.txt")

# QMC5883L, ±8 G (3000 LSB/G = 30 LSB/µT): X 24 µT, Y -6 µT, Z -41.5667 µT
q = {0x09: 0x19, 0x0B: 0x01, 0x0C: 0x01, 0x0D: 0xFF, 0x06: 0x01}
put(q, 0x00, le(720) + le(-180) + le(-1247))
put(q, 0x07, le(1234))
dump(q, "qmc5883l-known-field.txt")
q2 = dict(q); q2[0x06] = 0x03; put(q2, 0x00, le(32767) + le(-180) + le(-1247))
dump(q2, "qmc5883l-overflow.txt")
