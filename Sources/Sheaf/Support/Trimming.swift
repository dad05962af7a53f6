extension StringProtocol {
    /// Without the spaces and tabs around it (an HTTP header value's optional whitespace).
    var trimmingSpaces: String {
        var view = self[...]
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
