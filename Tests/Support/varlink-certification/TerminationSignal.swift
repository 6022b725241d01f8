import Dispatch
import Glibc

/// Waits for SIGTERM or SIGINT (kept off the main actor: the handlers run on a
/// dispatch queue).
enum TerminationSignal {
    /// Returns once the process received SIGTERM or SIGINT.
    static func wait() async {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let (signals, continuation) = AsyncStream<Int32>.makeStream()
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        for await _ in signals { break }
        sources.forEach { $0.cancel() }
    }
}
