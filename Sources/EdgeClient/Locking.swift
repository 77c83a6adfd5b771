#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A joinable pthread running `body` (client code never runs on the
/// cooperative pool: its reads block).
final class ClientThread: @unchecked Sendable {
    private var thread = pthread_t()

    init(name: String, _ body: @escaping @Sendable () -> Void) throws(AgentClientError) {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var t = pthread_t()
        let r = pthread_create(&t, nil, { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
        guard r == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw .system(call: "pthread_create", path: name, errno: r)
        }
        thread = t
    }

    func join() { pthread_join(thread, nil) }
}

private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
