/// Receives readiness events for one registered descriptor. Called on the loop thread.
protocol EventLoopHandler: AnyObject {
    func handleEvents(_ events: UInt32)
}
