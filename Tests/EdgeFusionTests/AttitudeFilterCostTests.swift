import Testing
@testable import EdgeFusion

/// The cheaper evaluations of issue 22 (the filter's cost per sample) against
/// independent references: the gyroscope-bias Kalman step against VQF's
/// full 3×3 evaluation (`vqf/cpp/vqf.cpp`, `updateAcc`: K = P Rᵀ (W + R P Rᵀ)⁻¹,
/// bias += K e, P −= K R P, written here with plain nested arrays), and the
/// heading disagreement's series against libm's `atan2`.
@Suite struct AttitudeFilterCostTests {
    /// Never at rest, then still: the bias step in motion (R the low-passed
    /// rotation) and at rest (R the identity).
    static func moveThenRest(_ t: Double) -> Quaternion {
        let moving = min(t, 20)
        return Quaternion(axis: Vector3(mathCos(0.2 * moving), mathSin(0.2 * moving), 0.3), angle: 0.5 * mathSin(1.1 * moving))
            * Quaternion(yaw: 0.4 * mathSin(0.37 * moving))
    }

    /// VQF's bias update on 3×3 arrays, in VQF's order of operations.
    static func referenceBiasStep(p: [[Double]], r: [[Double]], w: [Double], e: [Double], bias: [Double],
                                  clip: Double) -> (bias: [Double], p: [[Double]]) {
        func mul(_ a: [[Double]], _ b: [[Double]]) -> [[Double]] {
            (0..<3).map { i in (0..<3).map { j in (0..<3).reduce(0.0) { $0 + a[i][$1] * b[$1][j] } } }
        }
        func tr(_ a: [[Double]]) -> [[Double]] { (0..<3).map { i in (0..<3).map { j in a[j][i] } } }
        func inv(_ m: [[Double]]) -> [[Double]] {
            let a = m[0][0], b = m[0][1], c = m[0][2], d = m[1][0], e = m[1][1], f = m[1][2], g = m[2][0], h = m[2][1], k = m[2][2]
            let A = e * k - f * h, B = -(d * k - f * g), C = d * h - e * g
            let det = a * A + b * B + c * C
            return [[A / det, -(b * k - c * h) / det, (b * f - c * e) / det],
                    [B / det, (a * k - c * g) / det, -(a * f - c * d) / det],
                    [C / det, -(a * h - b * g) / det, (a * e - b * d) / det]]
        }
        var s = mul(mul(r, p), tr(r))
        for i in 0..<3 { s[i][i] += w[i] }
        let k = mul(mul(p, tr(r)), inv(s))
        let ec = e.map { min(max($0, -clip), clip) }
        var nb = (0..<3).map { i in bias[i] + (0..<3).reduce(0.0) { $0 + k[i][$1] * ec[$1] } }
        nb = nb.map { min(max($0, -clip), clip) }
        let krp = mul(mul(k, r), p)
        let np = (0..<3).map { i in (0..<3).map { j in p[i][j] - krp[i][j] } }
        return (nb, np)
    }

    static func rows(_ m: Matrix3) -> [[Double]] { [[m.r0.x, m.r0.y, m.r0.z], [m.r1.x, m.r1.y, m.r1.z], [m.r2.x, m.r2.y, m.r2.z]] }

    @Test func biasStepEqualsVQFsFullMatrixEvaluation() {
        var gen = Synthetic()
        gen.gyroBias = Vector3(0.5, -0.4, 0.3) * deg
        let data = gen.generate(duration: 30, orientation: Self.moveThenRest)
        var f = AttitudeFilter(sampleInterval: 0.005)
        let dt = 0.005
        var checked = (motion: 0, rest: 0)
        for (n, s) in data.enumerated() {
            f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: dt)
            guard n % 7 == 0 else { continue }
            // one bias step from this state, with the filter's own inputs
            let st = f.state, c = f.coefficients
            let q6 = st.accQuat * st.gyroQuat
            let accEarth = st.accQuat.rotate(st.accLp.output).normalized
            var g = f
            g.estimateBias(accEarth: accEarth, dt: dt)
            // VQF's: R and R·bias low-passed, P += V, e and W, then the update
            var rLp = st.motionBiasR, bLp = st.motionBiasLp
            var r = rLp.step(q6.rotationMatrix, c.accLp, tau: f.settings.tauAcc, dt: dt)
            let rb = q6.rotationMatrix * st.bias
            let biasLp = bLp.step(SIMD2(rb.x, rb.y), c.accLp, tau: f.settings.tauAcc, dt: dt)
            var p = Self.rows(st.biasP)
            for k in 0..<3 where p[k][k] < c.biasP0 { p[k][k] += c.biasV }
            let e: [Double], w: [Double]
            if st.restDetected {
                let d = st.restGyroLp.output - st.bias
                e = [d.x, d.y, d.z]; w = [c.biasRestW, c.biasRestW, c.biasRestW]; r = .identity
                checked.rest += 1
            } else {
                let b = st.bias
                e = [-accEarth.y / dt + biasLp.x - r.r0.dot(b), accEarth.x / dt + biasLp.y - r.r1.dot(b), -r.r2.dot(b)]
                w = [c.biasMotionW, c.biasMotionW, c.biasVerticalW]
                checked.motion += 1
            }
            let ref = Self.referenceBiasStep(p: p, r: Self.rows(r), w: w, e: e,
                                             bias: [st.bias.x, st.bias.y, st.bias.z], clip: c.biasClip)
            let got = Self.rows(g.state.biasP), gotBias = [g.state.bias.x, g.state.bias.y, g.state.bias.z]
            for i in 0..<3 {
                #expect(abs(gotBias[i] - ref.bias[i]) <= 1e-12 * max(abs(ref.bias[i]), 1e-6),
                        "sample \(n): bias \(gotBias) vs \(ref.bias)")
                for j in 0..<3 {
                    #expect(abs(got[i][j] - ref.p[i][j]) <= 1e-10 * max(abs(ref.p[i][i]), abs(ref.p[j][j])),
                            "sample \(n): P[\(i)][\(j)] \(got[i][j]) vs \(ref.p[i][j])")
                }
            }
        }
        #expect(checked.motion > 100 && checked.rest > 100, "\(checked)")
    }

    @Test func biasCovarianceStaysExactlySymmetric() {
        // P is symmetric by construction (P₀ = σ² I, P −= Aᵀ S⁻¹ A with S
        // symmetric); a full evaluation lets rounding make it drift apart
        var gen = Synthetic()
        gen.gyroBias = Vector3(0.5, -0.4, 0.3) * deg
        let data = gen.generate(duration: 30, orientation: Self.moveThenRest)
        var f = AttitudeFilter(sampleInterval: 0.005)
        var asymmetric = 0
        for s in data {
            f.update(gyro: s.gyro, accel: s.accel, mag: s.mag, dt: 0.005)
            let p = f.state.biasP
            if p.r0.y != p.r1.x || p.r0.z != p.r2.x || p.r1.z != p.r2.y { asymmetric += 1 }
        }
        #expect(asymmetric == 0, "P not symmetric after \(asymmetric) of \(data.count) samples")
    }

    @Test func headingSeriesIsWithinAnUlpOfAtan2() {
        // near +y (the series) and everywhere else (atan2 itself)
        var worst = 0.0
        for i in -400...400 {
            for y in [1e-3, 0.3, 1.0, 17.0, 48.0] {
                let x = Double(i) / 400 * 0.125 * y
                let a = AttitudeFilter.heading(x: x, y: y), b = mathAtan2(x, y)
                if b != 0 { worst = max(worst, abs(a - b) / b.ulp) } else { #expect(a == 0) }
            }
        }
        #expect(worst <= 2, "series differs from atan2 by \(worst) ulp")
        for (x, y) in [(1.0, 1.0), (-3.0, 0.5), (0.2, -1.0), (0.0, -2.0), (-1e-9, -1.0), (5.0, 0.0), (0.0, 0.0)] {
            #expect(AttitudeFilter.heading(x: x, y: y) == mathAtan2(x, y), "(\(x), \(y))")
        }
    }
}
