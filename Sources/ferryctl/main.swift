import Glibc

// ferryctl: the command line client of ferryd. Everything happens in `Ferryctl.main`.
let code = await Ferryctl.main(Array(CommandLine.arguments.dropFirst()))
exit(code.rawValue)
