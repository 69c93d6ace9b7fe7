import CQRencode

/// A QR code drawn with Unicode half blocks, two modules a character row, light modules as
/// blocks so it scans on a dark terminal, with a two-module quiet zone.
enum TerminalQRCode {
    /// The code for `text` (8-bit mode, error correction M), or nil when libqrencode refuses it
    /// (too long for a QR code).
    static func render(_ text: String) -> String? {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let modules = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        let margin = 2
        let size = width + 2 * margin
        // The module at (x, y) of the quiet-zoned square is dark.
        func dark(_ x: Int, _ y: Int) -> Bool {
            let (column, row) = (x - margin, y - margin)
            guard (0..<width).contains(column), (0..<width).contains(row) else { return false }
            return modules[row * width + column] & 1 == 1
        }
        var lines: [String] = []
        for y in stride(from: 0, to: size, by: 2) {
            var line = ""
            for x in 0..<size {
                let top = !dark(x, y)
                let bottom = y + 1 < size ? !dark(x, y + 1) : false
                line += top ? (bottom ? "█" : "▀") : (bottom ? "▄" : " ")
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
