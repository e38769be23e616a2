import Relay

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// `Reproduction split`: the shape `RelayPool.publish` had, the tuple split across the suspension.
/// `Reproduction awaited`: the shape it has now, the answer awaited into a local first.
/// Exits 0 when every id comes back intact; a miscompiled build traps, crashes or hangs.
enum Shape: String { case split, awaited }

func publish(_ events: [Event], to connection: Connection, shape: Shape) async -> [EventID] {
    await withTaskGroup(of: (EventID, Result<Bool, any Error>).self) { group in
        for event in events {
            group.addTask {
                switch shape {
                case .split:
                    do { return (event.id, .success(try await connection.publish(event))) } catch { return (event.id, .failure(error)) }
                case .awaited:
                    let answer: Result<Bool, any Error>
                    do { answer = .success(try await connection.publish(event)) } catch { answer = .failure(error) }
                    return (event.id, answer)
                }
            }
        }
        var ids: [EventID] = []
        for await (id, _) in group { ids.append(id) }
        return ids
    }
}

guard CommandLine.arguments.count == 2, let shape = Shape(rawValue: CommandLine.arguments[1]) else {
    print("usage: Reproduction split|awaited")
    exit(2)
}
let connection = Connection()
for round in 0..<500 {
    let events = (0..<3).map { index in Event(id: EventID(bytes: Array(repeating: UInt8((index + round) % 250), count: 32))) }
    let ids = await publish(events, to: connection, shape: shape)
    guard Set(ids) == Set(events.map(\.id)) else {
        print("\(shape): round \(round): the ids came back wrong")
        exit(1)
    }
}
print("\(shape): ok")
