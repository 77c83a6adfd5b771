/// Magnetic declination: the angle from true north to magnetic north,
/// positive east, degrees.
public enum MagneticDeclination {
    /// North geomagnetic pole of the centred dipole, IGRF-13 epoch 2020
    /// (latitude 80.65° N, longitude 72.68° W).
    public static let dipolePoleLatitude = 80.65
    public static let dipolePoleLongitude = -72.68

    /// A coarse declination (degrees, east positive) from a centred-dipole
    /// model: the initial great-circle bearing from the location to the
    /// north geomagnetic pole. Errors reach 10–20° in places (the real field
    /// is not a dipole); configure a measured or charted declination (e.g.
    /// NOAA's WMM calculator) where it matters. Latitude and longitude in
    /// degrees (north, east positive).
    public static func dipoleEstimate(latitude: Double, longitude: Double) -> Double {
        let d = Double.pi / 180
        let lat = latitude * d, lon = longitude * d
        let plat = dipolePoleLatitude * d, plon = dipolePoleLongitude * d
        let dl = plon - lon
        let y = mathSin(dl) * mathCos(plat)
        let x = mathCos(lat) * mathSin(plat) - mathSin(lat) * mathCos(plat) * mathCos(dl)
        return mathAtan2(y, x) / d
    }
}
