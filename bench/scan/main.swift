// scan_pages: the library's page scanner alone, on pages saved in a file (bench/run.py's P5 scan row).
//
//     scan_pages PAGES_FILE [REPS]
//
// Compiled by bench/run.py together with the scanner's own source files (Sources/Sheaf/Read/
// JSONScanner.swift, JSONPointer.swift, JSONSyntaxError.swift), with the flags SwiftPM gives the
// library in release (-O, whole module), so what is timed is the library's code. Each pass scans
// every page as PageReader does for the P5 list: validates it whole and finds the element ranges
// of /items and the values of /total and /next_page in the same pass. PAGES_FILE holds the pages
// one after another, each as its length in decimal, a newline, then its bytes (bench/run.py
// writes it). Prints one JSON object: the fastest pass and the median of REPS (default 7).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func fail(_ message: String) -> Never {
    fputs("scan_pages: \(message)\n", stderr)
    exit(3)
}

func readPages(_ path: String) -> [[UInt8]] {
    guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count == 0 { break }
        data += chunk[..<count]
    }
    fclose(file)
    var pages: [[UInt8]] = []
    var index = 0
    while index < data.count {
        guard let newline = data[index...].firstIndex(of: UInt8(ascii: "\n")),
              let length = Int(String(decoding: data[index..<newline], as: UTF8.self)),
              newline + 1 + length <= data.count else { fail("\(path) is not a pages file (at byte \(index))") }
        pages.append(Array(data[(newline + 1)..<(newline + 1 + length)]))
        index = newline + 1 + length
    }
    if pages.isEmpty { fail("\(path) holds no page") }
    return pages
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: scan_pages PAGES_FILE [REPS]") }
let reps = arguments.count > 2 ? Int(arguments[2]) ?? 7 : 7
let pages = readPages(arguments[1])
let bytes = pages.reduce(0) { $0 + $1.count }
let pointers = ["/items", "/total", "/next_page"].map { JSONPointer($0)! }

var passes: [Double] = []
var items = 0
for _ in 0..<max(reps, 1) {
    items = 0
    let start = now()
    for page in pages {
        page.withUnsafeBufferPointer { buffer in
            var targets = pointers.enumerated().map { JSONScanner.Target(pointer: $0.element, collectsElements: $0.offset == 0) }
            do throws(JSONSyntaxError) {
                try JSONScanner(buffer).scanDocument(&targets)
            } catch {
                fail("a page is not JSON: \(error)")
            }
            items += targets[0].elements.count
        }
    }
    passes.append(now() - start)
}
passes.sort()
print("{\"driver\":\"sheaf scanner\",\"pages\":\(pages.count),\"bytes\":\(bytes),\"items\":\(items),"
      + "\"best_seconds\":\(passes[0]),\"seconds\":\(passes[passes.count / 2]),\"reps\":\(passes.count)}")
