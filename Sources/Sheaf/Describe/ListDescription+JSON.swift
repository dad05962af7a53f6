/// A description as a JSON object: how C, Python and the command line see what a list reads and
/// what detection decided (the form is in sheaf.h, at sheaf_list_description).
extension ListDescription {
    /// - Parameters:
    ///   - resolution: what detection decided, once the first page is in; nil before.
    ///   - plan: the walk chosen, once known.
    /// A description that names a preset prints the preset's summary too, so a list described by a
    /// preset prints what sheaf_preset_description does.
    package func json(resolution: Detector.Resolution?, plan: String?) -> [UInt8] {
        json(resolution: resolution, plan: plan, sync: nil)
    }

    /// As `json(resolution:plan:)`, with the state a syncing run got to and the list it is of,
    /// printed as "sync_state" (nil: none).
    package func json(resolution: Detector.Resolution?, plan: String?, sync: (list: String?, state: SyncState)?,
                      splitPlan: String? = nil) -> [UInt8] {
        let named = preset.flatMap { name in Preset.all.first { $0.name == name } }
        var out = "{\"paging\":{\"kind\":\(JSONText.quote(paging.kindName)),\"param\":\(JSONText.quote(paging.parameter))"
        out += ",\"first\":\(paging.first ?? 0),\"size_param\":\(JSONText.quote(paging.size?.parameter))"
        out += ",\"size\":\(paging.size?.value.map(String.init) ?? "null"),\"detected\":\(resolution?.pagingDetected ?? false)}"
        out += ",\"signals\":{"
        out += Signal.allCases.map { signal in
            let source = self.source(of: signal)
            let value = source == .none ? "null"
                : "{\"source\":\(JSONText.quote(source.kindName)),\"where\":\(JSONText.quote(source.whereText))"
                  + ",\"detected\":\(resolution?.detected.contains(signal) ?? false)}"
            return "\(JSONText.quote(signal.rawValue)):\(value)"
        }.joined(separator: ",")
        out += "},\"plan\":\(JSONText.quote(plan)),\"preset\":\(JSONText.quote(preset))"
        if let summary = named?.summary { out += ",\"summary\":\(JSONText.quote(summary))" }
        out += syncJSONMembers()
        if let split { out += ",\"split\":" + split.json }
        // What the preset says is not said again (a preset's description prints as the preset).
        if readOnly != (named?.readOnly ?? false) { out += ",\"read_only\":\(readOnly)" }
        if let graphQL { out += ",\"graphql\":" + graphQL.json }
        if let splitPlan { out += ",\"split_plan\":" + JSONText.quote(splitPlan) }
        if let sync { out += ",\"sync_state\":" + sync.state.json(list: sync.list) }
        out += "}"
        return Array(out.utf8)
    }
}

extension Preset {
    /// What the preset pins, in the description's JSON form, with its summary.
    public var descriptionJSON: [UInt8] {
        applied(to: ListDescription(path: "")).json(resolution: nil, plan: nil)
    }
}

extension Paging {
    var kindName: String {
        switch self {
        case .detect: "detect"
        case .single: "single"
        case .next: "next"
        case .pageNumber: "page_number"
        case .offset: "offset"
        case .cursor: "cursor"
        }
    }
}
