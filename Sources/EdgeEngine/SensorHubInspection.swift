import EdgeFusion

/// For tests and tools: what the hub's stages hold now. The hub itself
/// names no stage (it runs what ``StageTable`` gives it); these look one
/// up by type, and each returns a copy.
extension SensorHub {
    /// The stage of type `T`, if the board runs one (a copy: for tests and tools).
    func stage<T: EngineStage>(_: T.Type) -> T? {
        for st in stages { if let t = st as? T { return t } }
        return nil
    }
    /// The primary attitude filter.
    public var primaryFilter: AttitudeFilter? { stage(FusionStage.self)?.filter }
    public var accessoryFilter: AttitudeFilter? { stage(AccessoryStage.self)?.filter }
    public var altitudeOutput: AltitudeFilter.Output {
        stage(AltitudeStage.self)?.filter.output ?? AltitudeFilter(settings: settings.altitude).output
    }
    /// The pedometer's totals now (steps, distance m, floors up, floors down).
    public var fitnessTotals: (steps: Int, distance: Double, up: Int, down: Int) {
        stage(FitnessStage.self)?.totals ?? (0, 0, 0, 0)
    }
}
