import Foundation

/// Policy for signature verification.
public struct ApplePayVerifierConfiguration: Sendable {
    /// The only anchor chains may end in.
    public var trustRoot: TrustRoot
    /// How far in the past (relative to the verification clock) the CMS signing time may be. Apple gives no number;
    /// 5 minutes follows processout and Apple's "a few minutes" replay guidance.
    public var signingTimeMaxAge: TimeInterval
    /// How far in the future the signing time may be (device clock skew).
    public var signingTimeMaxFutureSkew: TimeInterval
    /// How many distinct certificate sets the chain cache keeps (Apple rotates leaves rarely; a small number is plenty).
    public var chainCacheCapacity: Int

    public init(
        trustRoot: TrustRoot = .appleRootCAG3, signingTimeMaxAge: TimeInterval = 300,
        signingTimeMaxFutureSkew: TimeInterval = 60, chainCacheCapacity: Int = 64
    ) {
        self.trustRoot = trustRoot
        self.signingTimeMaxAge = signingTimeMaxAge
        self.signingTimeMaxFutureSkew = signingTimeMaxFutureSkew
        self.chainCacheCapacity = chainCacheCapacity
    }
}
