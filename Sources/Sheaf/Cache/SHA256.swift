/// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the response cache's keys and its
/// entries' integrity: the library links no crypto library of its own. Not for secrets at rest
/// (nothing secret is stored), and not constant-time beyond `equalInConstantTime`.
struct SHA256 {
    private var state: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) == nil {
            Array(bytes).withUnsafeBytes { update($0) }
        }
    }

    /// Whole blocks are compressed where they lie; only a partial block is copied.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var rest = bytes[...]
        if !pending.isEmpty {
            let taken = min(64 - pending.count, rest.count)
            pending += rest.prefix(taken)
            rest = rest.dropFirst(taken)
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let whole = rest.count / 64 * 64
        if whole > 0 { compress(UnsafeRawBufferPointer(rebasing: rest.prefix(whole))) }
        pending += rest.dropFirst(whole)
    }

    /// Feeds `bytes` preceded by their length, so that fields fed one after another cannot run
    /// into each other ("ab" + "c" is not "a" + "bc").
    mutating func field<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        update(UInt64(bytes.count).bigEndianBytes)
        update(bytes)
    }

    consuming func finish() -> [UInt8] {
        let bits = length &* 8
        var tail: [UInt8] = [0x80]
        tail += [UInt8](repeating: 0, count: (119 - pending.count) % 64)
        tail += bits.bigEndianBytes
        update(tail)
        return state.flatMap { $0.bigEndianBytes }
    }

    static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finish()
    }

    /// Compresses `blocks` (a whole number of 64-byte blocks) into the state.
    private mutating func compress(_ blocks: UnsafeRawBufferPointer) {
        var (a0, b0, c0, d0, e0, f0, g0, h0) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        Self.k.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                var offset = 0
                while offset + 64 <= blocks.count {
                    for i in 0..<16 {
                        w[i] = UInt32(bigEndian: blocks.loadUnaligned(fromByteOffset: offset + 4 * i, as: UInt32.self))
                    }
                    for i in 16..<64 {
                        let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
                        let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
                        w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                    }
                    var (a, b, c, d, e, f, g, h) = (a0, b0, c0, d0, e0, f0, g0, h0)
                    for i in 0..<64 {
                        let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let choose = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ choose &+ k[i] &+ w[i]
                        let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ s0 &+ majority)
                    }
                    a0 &+= a; b0 &+= b; c0 &+= c; d0 &+= d; e0 &+= e; f0 &+= f; g0 &+= g; h0 &+= h
                    offset += 64
                }
            }
        }
        state = [a0, b0, c0, d0, e0, f0, g0, h0]
    }
}

/// HMAC-SHA-256 under one key.
struct HMACKey {
    private let inner: [UInt8]
    private let outer: [UInt8]

    init(_ key: [UInt8]) {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        inner = block.map { $0 ^ 0x36 }
        outer = block.map { $0 ^ 0x5c }
    }

    /// A hasher for one message: feed it, then `finish(_:)`.
    func start() -> SHA256 {
        var hasher = SHA256()
        hasher.update(inner)
        return hasher
    }

    func finish(_ hasher: consuming SHA256) -> [UInt8] {
        var outside = SHA256()
        outside.update(outer)
        outside.update(hasher.finish())
        return outside.finish()
    }

    func mac<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = start()
        hasher.update(bytes)
        return finish(hasher)
    }
}

/// Whether two byte strings are equal, in a time that depends only on their lengths.
func equalInConstantTime(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for (x, y) in zip(a, b) { difference |= x ^ y }
    return difference == 0
}

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] {
        (0..<(Self.bitWidth / 8)).reversed().map { UInt8(truncatingIfNeeded: self >> ($0 * 8)) }
    }

    func rotatedRight(_ count: Int) -> Self {
        (self >> count) | (self << (Self.bitWidth - count))
    }
}
