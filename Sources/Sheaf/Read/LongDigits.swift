/// Whether `json` holds 19 or more ASCII digits in a row: an integer that may not fit 64 bits
/// (18 digits always do), or digits in a string. Such a run covers a whole aligned 8-byte word
/// of digits, so words are tested 8 bytes at a time and a run is measured only around one.
package func hasLongDigitRun(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let count = bytes.count
    @inline(__always) func isDigit(_ index: Int) -> Bool { bytes[index] &- UInt8(ascii: "0") < 10 }
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    var word = 0
    while word + 8 <= count {
        let value = bytes.loadUnaligned(fromByteOffset: word, as: UInt64.self)
        let low = value & ~highs
        // A byte is a digit when its high bit is clear, it is at least 0x30 and below 0x3A.
        let notDigit = (~(low &+ 0x50 &* ones) | (low &+ 0x46 &* ones) | value) & highs
        if notDigit == 0 {
            var start = word, end = word + 8
            while start > 0, isDigit(start - 1) { start -= 1 }
            while end < count, isDigit(end) { end += 1 }
            if end - start >= 19 { return true }
            word = (end + 7) / 8 * 8
        } else {
            word += 8
        }
    }
    return false
}
