import Foundation

/// Typed access to environment variables with defaults and errors that name the variable.
///
/// Takes the environment as a dictionary rather than reading the process environment itself, so
/// configuration parsing is pure and unit-testable.
public struct EnvironmentReader: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    /// The raw value, treating an empty string as unset (compose files often pass `VAR=`).
    public func raw(_ name: String) -> String? {
        guard let value = values[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    public func string(_ name: String, default defaultValue: String) -> String {
        raw(name) ?? defaultValue
    }

    public func integer<T: FixedWidthInteger>(
        _ name: String, default defaultValue: T, range: ClosedRange<T>
    ) throws(ConfigurationError) -> T {
        guard let text = raw(name) else { return defaultValue }
        guard let value = T(text), range.contains(value) else {
            throw ConfigurationError(variable: name, problem: "expected an integer in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return value
    }

    public func seconds(_ name: String, default defaultValue: Double, range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard let text = raw(name) else { return defaultValue }
        guard let value = DurationParser.seconds(text), range.contains(value) else {
            throw ConfigurationError(variable: name, problem: "expected a duration (e.g. 500ms, 5s, 2m) in \(range.lowerBound)s...\(range.upperBound)s, got '\(text)'")
        }
        return value
    }

    /// A decimal number (e.g. a rate, `0.5`).
    public func double(_ name: String, default defaultValue: Double, range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard let text = raw(name) else { return defaultValue }
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value.isFinite, range.contains(value) else {
            throw ConfigurationError(variable: name, problem: "expected a number in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return value
    }

    public func flag(_ name: String, default defaultValue: Bool) throws(ConfigurationError) -> Bool {
        guard let text = raw(name)?.lowercased() else { return defaultValue }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, problem: "expected 1/0, true/false, yes/no or on/off, got '\(text)'")
        }
    }

    public func choice<T: RawRepresentable & CaseIterable>(_ name: String, default defaultValue: T) throws(ConfigurationError) -> T
    where T.RawValue == String {
        guard let text = raw(name) else { return defaultValue }
        guard let value = T(rawValue: text.lowercased()) else {
            let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(variable: name, problem: "expected one of \(allowed), got '\(text)'")
        }
        return value
    }
}

/// Parses durations written as `250ms`, `5s`, `2m`, `1h`, `5d` or plain seconds (`1.5`).
public enum DurationParser {
    public static func seconds(_ text: String) -> Double? {
        let units: [(suffix: String, factor: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            guard let number = Double(trimmed.dropLast(unit.suffix.count)), number >= 0 else { return nil }
            return number * unit.factor
        }
        guard let number = Double(trimmed), number >= 0 else { return nil }
        return number
    }
}
