import Foundation
/// Splits a migration script into statements. PostgreSQL's extended query protocol, which
/// postgres-nio speaks, takes one statement at a time, so `;` separators are found here, outside
/// quotes ('…', "…"), dollar-quoted bodies ($$…$$, $tag$…$tag$) and comments (-- …, /* … */).
package enum SQLScript {
    package static func statements(_ script: String) -> [String] {
        let chars = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var i = 0
        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty, !isOnlyComments(text) { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            if c == "-", next == "-" {
                while i < chars.count, chars[i] != "\n" { current.append(chars[i]); i += 1 }
                continue
            }
            if c == "/", next == "*" {
                var depth = 0
                repeat {
                    if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "*" { depth += 1; current.append(chars[i]); i += 1 }
                    else if chars[i] == "*", i + 1 < chars.count, chars[i + 1] == "/" { depth -= 1; current.append(chars[i]); i += 1 }
                    current.append(chars[i])
                    i += 1
                } while i < chars.count && depth > 0
                continue
            }
            if c == "'" || c == "\"" {
                current.append(c)
                i += 1
                while i < chars.count {
                    current.append(chars[i])
                    if chars[i] == c {
                        if i + 1 < chars.count, chars[i + 1] == c { current.append(chars[i + 1]); i += 2; continue }
                        i += 1
                        break
                    }
                    i += 1
                }
                continue
            }
            if c == "$", let tagEnd = dollarTagEnd(chars, from: i) {
                let tag = Array(chars[i...tagEnd])
                current.append(contentsOf: tag)
                i = tagEnd + 1
                while i < chars.count {
                    if chars[i] == "$", i + tag.count <= chars.count, Array(chars[i..<(i + tag.count)]) == tag {
                        current.append(contentsOf: tag)
                        i += tag.count
                        break
                    }
                    current.append(chars[i])
                    i += 1
                }
                continue
            }
            if c == ";" {
                flush()
                i += 1
                continue
            }
            current.append(c)
            i += 1
        }
        flush()
        return statements
    }

    /// `$$` or `$tag$` starting at `start`: the index of the closing `$` of the opening tag.
    private static func dollarTagEnd(_ chars: [Unicode.Scalar], from start: Int) -> Int? {
        var j = start + 1
        while j < chars.count {
            let c = chars[j]
            if c == "$" { return j }
            guard c == "_" || c.properties.isAlphabetic || (j > start + 1 && ("0"..."9").contains(c)) else { return nil }
            j += 1
        }
        return nil
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--") || $0.trimmingCharacters(in: .whitespaces).isEmpty }
    }
}
