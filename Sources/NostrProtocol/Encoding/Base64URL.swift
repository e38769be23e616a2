/// RFC 4648 §5 base64url without padding, the form JWS (RFC 7515) and Web Push keys use.
/// Decoding is strict: `=`, `+`, `/` and non-zero unused bits are refused, so each byte string has
/// one accepted text.
public enum Base64URL {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Array(Base64.encode(bytes).utf8)
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        for index in text.indices {
            if text[index] == UInt8(ascii: "+") {
                text[index] = UInt8(ascii: "-")
            } else if text[index] == UInt8(ascii: "/") {
                text[index] = UInt8(ascii: "_")
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = Array(text.utf8)
        for index in standard.indices {
            switch standard[index] {
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            case UInt8(ascii: "-"): standard[index] = UInt8(ascii: "+")
            case UInt8(ascii: "_"): standard[index] = UInt8(ascii: "/")
            default: break
            }
        }
        return Base64.decode(String(decoding: standard, as: UTF8.self), requirePadding: false)
    }
}
