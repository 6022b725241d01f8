/// The settings as `ferryd --check-config` prints them.
extension DaemonConfiguration {
    /// Every setting, in ferryd.conf's own syntax and order (`[Daemon]`, `[Store]`, `[API]`,
    /// `[Sync]`, then each `[Transport NAME]`), with the value in effect: the default, the
    /// file's or the command line's. A relay token is never printed, only whether it is set.
    /// The output is itself a valid config file (a token aside).
    public var effectiveSettings: String {
        sections.map { name, keys in
            "[\(name)]\n" + keys.map { "\($0.0)=\($0.1)\n" }.joined()
        }.joined(separator: "\n")
    }

    /// The keys (as `Section.Key`) whose values differ from `running`'s, but for those a reload
    /// applies (`LogLevel=` and the [Transport] sections): what a reload leaves for the next start.
    public func keysTakingEffectAtNextStart(comparedWith running: DaemonConfiguration) -> [String] {
        var before: [String: String] = [:]
        for (name, keys) in running.sections where !name.hasPrefix("Transport ") {
            for (key, value) in keys { before[name + "." + key] = value }
        }
        var changed: [String] = []
        for (name, keys) in sections where !name.hasPrefix("Transport ") {
            for (key, value) in keys where key != "LogLevel" && before[name + "." + key] != value { changed.append(name + "." + key) }
        }
        return changed
    }

    /// Every setting by section, as `effectiveSettings` prints them.
    private var sections: [(String, [(String, String)])] {
        func seconds(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        }
        var sections: [(String, [(String, String)])] = [
            ("Daemon", [("StateDirectory", stateDirectory), ("Socket", socketPath), ("LogLevel", logLevel.name)]),
            ("Store", [("Durability", durability.rawValue), ("ImmutableEntities", immutableEntities.sorted().joined(separator: " ")),
                       ("MaxPayloadBytes", String(maxPayloadBytes)), ("MaxBatch", String(maxBatch)),
                       ("ConflictHistory", String(conflictHistory)), ("MaxDriftSeconds", String(maxDriftSeconds)),
                       ("MaxAttachmentBytes", String(maxAttachmentBytes)), ("AttachmentGraceSeconds", String(attachmentGraceSeconds))]),
            ("API", [("WatchBufferBytes", String(watchBufferBytes)), ("SlowWatcherGraceSeconds", seconds(slowWatcherGraceSeconds)),
                     ("MaxConnections", String(maxConnections)), ("BusyPollMicroseconds", String(busyPollMicroseconds))]),
            ("Sync", [("PollIntervalSeconds", String(pollIntervalSeconds)), ("DebounceMilliseconds", String(debounceMilliseconds)),
                      ("AttachmentWaitSeconds", String(attachmentWaitSeconds)), ("RelayTimeoutSeconds", String(relayTimeoutSeconds)),
                      ("BlobRetentionSeconds", blobRetentionSeconds.map(String.init) ?? "infinity")]),
        ]
        for t in transports {
            var keys = [("Kind", t.kind), ("Location", t.location), ("Space", t.space)]
            if t.token != nil { keys.append(("Token", "(set; not shown)")) }
            sections.append(("Transport " + t.name, keys))
        }
        return sections
    }
}
