/// Invariant checks for the fuzz targets. A broken invariant traps with a
/// message that says which one: the fuzzer then keeps the input as a crash.
/// (A typed error thrown for bad input is not a finding: the targets catch it.)

/// Stops the run: `what` is the broken invariant.
public func invariantBroken(_ what: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("fuzz invariant: \(what)", file: file, line: line)
}

/// The key path of the first NaN or infinite `Double`/`Float` stored in
/// `value` (walked with `Mirror`: structs, enums with payloads, optionals,
/// arrays, dictionaries), or nil when every number is finite.
public func nonFiniteNumber(in value: Any, path: String = "", depth: Int = 0,
                            nanMeansUnknown: Set<String> = []) -> String? {
    switch value {
    case let d as Double:
        if d.isNaN, let leaf = path.split(separator: ".").last, nanMeansUnknown.contains(String(leaf)) { return nil }
        return d.isFinite ? nil : "\(path.isEmpty ? "value" : path) = \(d)"
    case let f as Float: return f.isFinite ? nil : "\(path.isEmpty ? "value" : path) = \(f)"
    case let v as SIMD3<Double>:   // Vector3: Mirror does not see SIMD lanes
        return v.x.isFinite && v.y.isFinite && v.z.isFinite ? nil : "\(path.isEmpty ? "value" : path) = \(v)"
    case let v as SIMD4<Double>:
        return v.x.isFinite && v.y.isFinite && v.z.isFinite && v.w.isFinite ? nil : "\(path.isEmpty ? "value" : path) = \(v)"
    case is String, is Substring, is Bool, is any BinaryInteger: return nil
    default: break
    }
    guard depth < 40 else { return nil }
    let mirror = Mirror(reflecting: value)
    if mirror.displayStyle == .class { return nil }   // no cycles: decoded values are plain values
    for (i, child) in mirror.children.enumerated() {
        let name = child.label ?? "[\(i)]"
        let childPath = path.isEmpty ? name : (name.hasPrefix("[") ? path + name : path + "." + name)
        if let bad = nonFiniteNumber(in: child.value, path: childPath, depth: depth + 1,
                                     nanMeansUnknown: nanMeansUnknown) { return bad }
    }
    return nil
}

/// Traps when `value` holds a NaN or infinity: `what` names the value.
/// `nanMeansUnknown`: property names whose NaN is the type's documented
/// "not known" (e.g. a calibration's `temperatureCelsius`).
public func requireFinite(_ value: Any, _ what: String, nanMeansUnknown: Set<String> = [],
                          file: StaticString = #fileID, line: UInt = #line) {
    if let bad = nonFiniteNumber(in: value, nanMeansUnknown: nanMeansUnknown) {
        invariantBroken("\(what) holds a non-finite number: \(bad)", file: file, line: line)
    }
}
