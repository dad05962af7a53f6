/// The library's version.
public enum SheafVersion {
    public static let major = 1
    public static let minor = 0
    public static let patch = 0
    public static let string = "\(major).\(minor).\(patch)"
    public static let number = major * 10_000 + minor * 100 + patch
}
