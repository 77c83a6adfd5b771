// Core Motion's attitude as a value: the one definition shared by the
// filter (EdgeFusion), the MQTT bridge's Euler-angle topics and the
// CoreMotion library. Pure: no state, no filter.

/// The device's attitude in a reference frame (Core Motion's `CMAttitude`).
/// Only the quaternion is stored; the other forms are derived on demand.
public struct Attitude: Equatable, Sendable {
    /// Sensor-to-reference orientation: `v_reference = quaternion.rotate(v_device)`.
    public var quaternion: Quaternion
    public var referenceFrame: ReferenceFrame

    @inlinable public init(quaternion: Quaternion, referenceFrame: ReferenceFrame) {
        self.quaternion = quaternion; self.referenceFrame = referenceFrame
    }

    /// Core Motion's rotation matrix: reference frame to device
    /// (`device = rotationMatrix * reference`), the transpose of
    /// `quaternion.rotationMatrix`. Its third column (m13, m23, m33) is the
    /// device-frame up vector, i.e. −gravity.
    @inlinable public var rotationMatrix: Matrix3 { quaternion.rotationMatrix.transposed }

    /// Core Motion's Euler angles (rad): the attitude is
    /// `Rz(yaw) · Rx(pitch) · Ry(roll)` (device to reference). Pitch about
    /// the device X axis in [−π/2, π/2], roll about Y and yaw about Z in (−π, π].
    @inlinable public var pitch: Double {
        let q = quaternion
        return mathAsin(max(-1, min(1, 2 * (q.y * q.z + q.w * q.x))))
    }
    @inlinable public var roll: Double {
        let q = quaternion
        return mathAtan2(2 * (q.w * q.y - q.x * q.z), 1 - 2 * (q.x * q.x + q.y * q.y))
    }
    @inlinable public var yaw: Double {
        let q = quaternion
        return mathAtan2(2 * (q.w * q.z - q.x * q.y), 1 - 2 * (q.x * q.x + q.z * q.z))
    }

    /// The compass heading of the direction the device faces, degrees
    /// clockwise from the reference frame's X axis, in [0, 360): the
    /// horizontal part of its +Y axis (top edge) plus that of its −Z axis
    /// (out of the back). Flat, where the top edge points; upright, where
    /// the back looks (`CMDeviceMotion.heading`). Meaningful as a compass
    /// heading only in the north frames.
    @inlinable public var facingHeadingDegrees: Double {
        let q = quaternion
        let hx = 2 * (q.x * q.y - q.w * q.z) - 2 * (q.x * q.z + q.w * q.y)
        let hy = (1 - 2 * (q.x * q.x + q.z * q.z)) - 2 * (q.y * q.z - q.w * q.x)
        var heading = mathAtan2(-hy, hx) * (180 / Double.pi)
        if heading < 0 { heading += 360 }
        if heading >= 360 { heading -= 360 }
        return heading
    }

    /// The change from `reference` to this attitude, expressed in the
    /// reference attitude's device frame (Core Motion's `multiply(byInverseOf:)`).
    @inlinable public func relative(to reference: Attitude) -> Quaternion {
        reference.quaternion.conjugate * quaternion
    }
}
