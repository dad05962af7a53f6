extension ListRun {
    /// A run whose snapshots go into `channel` as `prepare` makes them (on the run's delivery
    /// thread, not on the consumer's) and count against the window until taken; a `goOn` of false
    /// stops the run after that element (if any). The channel ends with the run; closing it stops
    /// the run.
    package static func feeding<Element>(_ channel: SnapshotChannel<Element>, client: SheafClient, description: ListDescription,
                                         keepsItems: Bool, _ prepare: @escaping @Sendable (Snapshot) -> (element: Element?, goOn: Bool))
        throws(SheafError) -> ListRun {
        let run = try ListRun(client: client, description: description, keepsItems: keepsItems, consumer: .channel { snapshot in
            let (element, goOn) = prepare(snapshot)
            return (element.map(channel.push) ?? true) && goOn
        })
        channel.whenTaken({ [weak run] in run?.snapshotTaken() }, closed: { [weak run] in run?.stopTaking() })
        run.whenFinished { channel.finish() }
        return run
    }
}
