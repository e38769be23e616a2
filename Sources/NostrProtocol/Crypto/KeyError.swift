/// Why a key could not be read.
public enum KeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not hex, or not the right number of bytes.
    case malformed(expectedBytes: Int)
    /// A secret key of zero or not below the curve order.
    case secretKeyOutOfRange
    /// Not the x coordinate of a point on secp256k1.
    case notOnCurve
    /// A bech32 string that did not decode to the expected entity.
    indirect case bech32(NIP19Error)

    public var description: String {
        switch self {
        case .malformed(let count): "expected \(count) bytes as hex"
        case .secretKeyOutOfRange: "secret key is zero or not below the curve order"
        case .notOnCurve: "public key is not a point on secp256k1"
        case .bech32(let error): "bech32: \(error)"
        }
    }
}
