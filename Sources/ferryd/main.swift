// ferryd: Ferry's sync daemon. All the work is in FerryDaemon; this only hands over the
// command line and the environment.
import FerryDaemon
import Foundation

let code = await Daemon.main(arguments: Array(CommandLine.arguments.dropFirst()),
                             environment: ProcessInfo.processInfo.environment)
exit(code)
