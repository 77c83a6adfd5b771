#!/usr/bin/env python3
"""BME280 humidity test vectors, an independent reference for the Swift
integer formula (Tests/EdgeChipsCoreTests/BME280HumidityTests.swift).

Transcribed from Bosch BST-BME280-DS002 itself: the trimming-register layout
(section 4.2.2, Table 16) and the double-precision humidity compensation
(section 8.1, bme280_compensate_H_double). Python floats are IEEE doubles,
as the data sheet's `double`. Prints one Swift literal row per vector:
(calibration index, adc_H, t_fine, humidity %RH by the double formula).

Run: python3 Tests/Fixtures/bme280/humidity-vectors.py
"""

# Two trimming sets: one of the order read from production parts, one with
# negative H4/H5 (exercises the sign of the packed 12-bit fields) and H3 != 0.
CALIBRATIONS = [
    dict(H1=75, H2=362, H3=0, H4=313, H5=50, H6=30),
    dict(H1=0, H2=380, H3=12, H4=-100, H5=-18, H6=-2),
]


def register_bytes(c):
    """0xA1 and 0xE1..0xE7 as the chip stores them (DS Table 16)."""
    h2 = c["H2"] & 0xFFFF
    h4 = c["H4"] & 0xFFF
    h5 = c["H5"] & 0xFFF
    e = [h2 & 0xFF, h2 >> 8, c["H3"], h4 >> 4, ((h5 & 0xF) << 4) | (h4 & 0xF), h5 >> 4, c["H6"] & 0xFF]
    return c["H1"], e


def humidity_double(adc_h, t_fine, c):
    var_h = t_fine - 76800.0
    var_h = (adc_h - (c["H4"] * 64.0 + c["H5"] / 16384.0 * var_h)) * (
        c["H2"] / 65536.0 * (1.0 + c["H6"] / 67108864.0 * var_h * (1.0 + c["H3"] / 67108864.0 * var_h)))
    var_h = var_h * (1.0 - c["H1"] * var_h / 524288.0)
    return min(100.0, max(0.0, var_h))


def main():
    for i, c in enumerate(CALIBRATIONS):
        a1, e = register_bytes(c)
        print(f"// calibration {i}: 0xA1 = {a1:#04x}, 0xE1..0xE7 = " + " ".join(f"{b:#04x}" for b in e))
    # t_fine for about -10, 0, 25, 40 °C (t_fine / 5120 = °C)
    for i, c in enumerate(CALIBRATIONS):
        for t_fine in (-51200, 0, 128000, 204800):
            for adc_h in ((20000, 26000, 30000, 34000, 40000) if i == 0 else (1000, 4000, 7000, 10000)):
                h = humidity_double(adc_h, t_fine, c)
                print(f"({i}, {adc_h}, {t_fine}, {h!r}),")


if __name__ == "__main__":
    main()
