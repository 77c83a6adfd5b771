#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A joinable pthread running one closure. Library code creates its threads
/// itself (never the cooperative pool, never a main-actor closure).
struct ServiceThread: Sendable {
    let handle: pthread_t

    private final class Box {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(ServiceError) -> ServiceThread {
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        var tid = pthread_t()
        let r = pthread_create(&tid, nil, { arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard r == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw .system(PosixError(errno: r, call: "pthread_create"))
        }
        return ServiceThread(handle: tid)
    }

    func join() {
        _ = pthread_join(handle, nil)
    }
}
