extension Duration {
    /// The duration in seconds, fractions included: for rates, timers and JSON figures, which
    /// `Duration`'s own API only gives as whole seconds plus attoseconds.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
