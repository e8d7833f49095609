import Foundation

/// The one table renderer of the CLI: every column as wide as its widest cell (header included), two spaces between
/// columns, numbers right-aligned where the command says so, no trailing blanks. `--json` prints the same rows as one
/// object per line, keyed by the headers in snake_case, so the two outputs never disagree.
struct TextTable {
    enum Alignment { case left, right }

    let header: [String]
    let rows: [[String]]
    let alignments: [Alignment]

    /// `alignments` is per column; columns without one are left-aligned.
    init(header: [String] = [], rows: [[String]], alignments: [Alignment] = []) {
        self.header = header
        self.rows = rows
        self.alignments = alignments
    }

    func rendered(header showHeader: Bool = true) -> String {
        let lines = (showHeader && !header.isEmpty ? [header] : []) + rows
        let columns = lines.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in lines.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return lines.map { line in
            var text = ""
            for (column, cell) in line.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                let right = column < alignments.count && alignments[column] == .right
                if column > 0 { text += "  " }
                text += right ? padding + cell : cell + (column == line.count - 1 ? "" : padding)
            }
            return text
        }.joined(separator: "\n")
    }

    /// One JSON object per row (no trailing newline), keyed by the lower-cased headers with `_` for blanks.
    func jsonLines() -> String {
        let keys = header.map { $0.lowercased().replacingOccurrences(of: " ", with: "_") }
        return rows.map { row in
            let object = Dictionary(zip(keys, row), uniquingKeysWith: { first, _ in first })
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }.joined(separator: "\n")
    }
}
