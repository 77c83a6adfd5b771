import Testing
@testable import EdgeFusion

@Suite struct QuaternionTests {
    let samples: [Quaternion] = [
        .identity,
        Quaternion(axis: Vector3(1, 0, 0), angle: 0.3),
        Quaternion(axis: Vector3(0, 1, 0), angle: -2.0),
        Quaternion(axis: Vector3(1, 2, 3), angle: 1.1),
        Quaternion(axis: Vector3(-0.5, 0.2, 0.9), angle: 3.1),
        Quaternion(axis: Vector3(0, 0, 1), angle: .pi),
    ]

    @Test func productWithConjugateIsIdentity() {
        for q in samples {
            #expect((q * q.conjugate).angle(to: .identity) < 1e-12)
            #expect(abs(q.angle(to: Quaternion(axis: Vector3(0.3, 0.4, 0.5), angle: 1e-6) * q) - 1e-6) < 1e-15)
            #expect(abs(q.norm - 1) < 1e-12)
        }
    }

    @Test func qAndMinusQAreTheSameRotation() {
        for q in samples {
            let m = Quaternion(w: -q.w, x: -q.x, y: -q.y, z: -q.z)
            #expect(q.angle(to: m) < 1e-7)
            let v = Vector3(0.3, -1.2, 2)
            #expect((q.rotate(v) - m.rotate(v)).norm < 1e-12)
        }
    }

    @Test func rotateMatchesMatrixAndInverse() {
        let v = Vector3(0.3, -1.2, 2)
        for q in samples {
            #expect((q.rotationMatrix * v - q.rotate(v)).norm < 1e-12)
            #expect((q.inverseRotate(q.rotate(v)) - v).norm < 1e-12)
            #expect(abs(q.rotationMatrix.determinant - 1) < 1e-12)
            let mmt = q.rotationMatrix * q.rotationMatrix.transposed
            #expect((mmt.r0 - Vector3(1, 0, 0)).norm + (mmt.r1 - Vector3(0, 1, 0)).norm + (mmt.r2 - Vector3(0, 0, 1)).norm < 1e-12)
        }
    }

    @Test func productComposesRotations() {
        let v = Vector3(1, 2, 3)
        for a in samples { for b in samples {
            #expect(((a * b).rotate(v) - a.rotate(b.rotate(v))).norm < 1e-12)
        } }
    }

    @Test func matrixRoundTrip() {
        for q in samples {
            #expect(Quaternion(rotationMatrix: q.rotationMatrix).angle(to: q) < 1e-7)
        }
    }

    @Test func rotationVectorRoundTrip() {
        for q in samples {
            #expect(Quaternion(rotationVector: q.rotationVector).angle(to: q) < 1e-7)
        }
        let v = Vector3(0.1, -0.2, 0.3)
        #expect((Quaternion(rotationVector: v).rotationVector - v).norm < 1e-12)
        #expect(Quaternion(rotationVector: .zero) == .identity)
    }

    @Test func axisAngleRotatesTheRightWay() {
        // +90° about Z takes X to Y (right-handed)
        let q = Quaternion(axis: Vector3(0, 0, 1), angle: .pi / 2)
        #expect((q.rotate(Vector3(1, 0, 0)) - Vector3(0, 1, 0)).norm < 1e-12)
        #expect(Quaternion(yaw: .pi / 2).angle(to: q) < 1e-7)
        #expect(abs(q.angle(to: .identity) - .pi / 2) < 1e-12)
    }

    @Test func turnedAboutVerticalEqualsYawProduct() {
        for q in samples {
            let a = 0.7
            let t = q.turnedAboutVertical(cosHalf: mathCos(a / 2), sinHalf: mathSin(a / 2))
            #expect(t.angle(to: Quaternion(yaw: a) * q) < 1e-7)
        }
    }

    @Test func eulerAnglesFollowCoreMotionOrder() {
        // attitude = Rz(yaw) Rx(pitch) Ry(roll)
        let yaw = 0.4, pitch = -0.3, roll = 1.2
        let q = Quaternion(axis: Vector3(0, 0, 1), angle: yaw) * Quaternion(axis: Vector3(1, 0, 0), angle: pitch)
            * Quaternion(axis: Vector3(0, 1, 0), angle: roll)
        let a = Attitude(quaternion: q, referenceFrame: .xArbitraryZVertical)
        #expect(abs(a.yaw - yaw) < 1e-12)
        #expect(abs(a.pitch - pitch) < 1e-12)
        #expect(abs(a.roll - roll) < 1e-12)
        // Core Motion's matrix is reference-to-device; its third column is "up" in device coordinates
        let up = q.inverseRotate(Vector3(0, 0, 1))
        #expect((a.rotationMatrix.c2 - up).norm < 1e-12)
    }

    @Test func matrixInverse() {
        let m = Matrix3(Vector3(2, 1, 0), Vector3(1, 3, 1), Vector3(0, 1, 4))
        let i = m.inverse!
        let p = m * i
        #expect((p.r0 - Vector3(1, 0, 0)).norm + (p.r1 - Vector3(0, 1, 0)).norm + (p.r2 - Vector3(0, 0, 1)).norm < 1e-12)
        #expect(Matrix3(Vector3(1, 2, 3), Vector3(2, 4, 6), Vector3(0, 0, 1)).inverse == nil)
    }

    @Test func symmetricEigenDecomposes() {
        let m = Matrix3(Vector3(4, 1, 0.5), Vector3(1, 3, 0.2), Vector3(0.5, 0.2, 2))
        let (values, v) = symmetricEigen(m)
        let back = v * Matrix3(diagonal: values) * v.transposed
        #expect((back.r0 - m.r0).norm + (back.r1 - m.r1).norm + (back.r2 - m.r2).norm < 1e-10)
    }
}
