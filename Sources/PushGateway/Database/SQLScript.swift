import Foundation

/// Splits a migration script into statements. PostgreSQL's extended query protocol, which
/// postgres-nio speaks, takes one statement at a time, so `;` separators are found here, outside
/// quotes ('…', "…"), dollar-quoted bodies ($$…$$, $tag$…$tag$) and comments (-- …, /* … */).
package enum SQLScript {
    package static func statements(_ script: String) -> [String] {
        var scanner = StatementScanner(chars: Array(script.unicodeScalars))
        var statements: [String] = []
        func flush() {
            let text = String(scanner.current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty, !isOnlyComments(text) { statements.append(text) }
            scanner.current = String.UnicodeScalarView()
        }
        while let c = scanner.peek() {
            let next = scanner.peek(1)
            if c == "-", next == "-" {
                scanner.copyLineComment()
            } else if c == "/", next == "*" {
                scanner.copyBlockComment()
            } else if c == "'" || c == "\"" {
                scanner.copyQuoted(c)
            } else if c == "$", let tagEnd = dollarTagEnd(scanner.chars, from: scanner.i) {
                scanner.copyDollarQuoted(tagEnd: tagEnd)
            } else if c == ";" {
                flush()
                scanner.i += 1
            } else {
                scanner.current.append(c)
                scanner.i += 1
            }
        }
        flush()
        return statements
    }

    /// Walks the script, copying into `current` the statement being read; each `copy` takes one
    /// construct whole, so a `;` inside it is not a separator.
    private struct StatementScanner {
        let chars: [Unicode.Scalar]
        var i = 0
        var current = String.UnicodeScalarView()

        func peek(_ offset: Int = 0) -> Unicode.Scalar? { i + offset < chars.count ? chars[i + offset] : nil }

        /// `-- …` up to the newline, which is left for the caller.
        mutating func copyLineComment() {
            while i < chars.count, chars[i] != "\n" {
                current.append(chars[i])
                i += 1
            }
        }

        /// `/* … */`, nested ones included, as PostgreSQL nests them.
        mutating func copyBlockComment() {
            var depth = 0
            repeat {
                if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                    depth += 1
                    current.append(chars[i])
                    i += 1
                } else if chars[i] == "*", i + 1 < chars.count, chars[i + 1] == "/" {
                    depth -= 1
                    current.append(chars[i])
                    i += 1
                }
                current.append(chars[i])
                i += 1
            } while i < chars.count && depth > 0
        }

        /// `'…'` or `"…"`, where a doubled quote is a quote inside.
        mutating func copyQuoted(_ quote: Unicode.Scalar) {
            current.append(quote)
            i += 1
            while i < chars.count {
                current.append(chars[i])
                if chars[i] == quote {
                    if i + 1 < chars.count, chars[i + 1] == quote {
                        current.append(chars[i + 1])
                        i += 2
                        continue
                    }
                    i += 1
                    break
                }
                i += 1
            }
        }

        /// `$tag$ … $tag$`, the opening tag ending at `tagEnd`.
        mutating func copyDollarQuoted(tagEnd: Int) {
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
        }
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
        text.split(separator: "\n").allSatisfy {
            $0.trimmingCharacters(in: .whitespaces).hasPrefix("--") || $0.trimmingCharacters(in: .whitespaces).isEmpty
        }
    }
}
