import FerryCrypto
import FerryModel
import FerryRelay
import FerrySync

/// Envelopes with random bodies (the relay never opens them).
enum TestEnvelopes {
    static func owner() -> OwnerID { OwnerID(bytes: SecureRandom.bytes(16)) }
    static func stream() -> StreamID { StreamID(bytes: SecureRandom.bytes(16)) }

    /// An envelope of `owner` for `stream` at `millis`; the event id is derived from stream and
    /// stamp, as ferryd's sealer does, so sealing the same version twice gives the same id.
    static func make(owner: OwnerID, stream: StreamID, millis: Int64, counter: UInt16 = 0, deleted: Bool = false,
                     bodySize: Int = 64) -> Envelope {
        let stamp = Stamp(millis: millis, counter: counter, node: NodeID(7))
        var h = SHA256()
        h.update(stream.bytes + StampKey.make(stamp))
        let event = EventID(bytes: h.finalize())
        let header = EnvelopeHeader(owner: owner, device: NodeID(7), event: event, stamp: stamp, deleted: deleted, stream: stream)
        return Envelope(header: header, body: SecureRandom.bytes(bodySize))
    }

    static func incoming(_ e: Envelope) -> IncomingEvent { IncomingEvent(header: e.header, bytes: e.encoded) }
}
