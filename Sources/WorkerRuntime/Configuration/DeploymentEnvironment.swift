/// `PAYPIPE_ENV`: production (the default) is strict; sandbox relaxes what local runs and
/// docker compose need (test trust root, private webhook targets, key-file permission checks).
public enum DeploymentEnvironment: String, Sendable, CaseIterable {
    case production
    case sandbox
}
