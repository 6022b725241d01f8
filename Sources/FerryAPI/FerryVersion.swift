/// Ferry's version, reported by `--version`, `GetInfo` and `Status`.
public enum FerryVersion {
    public static let string = "0.1.0"
    public static let vendor = "Ferry"
    public static let url = "https://ferry.invalid/"
}
