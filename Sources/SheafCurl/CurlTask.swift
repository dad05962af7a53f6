import Sheaf

/// The handle `CurlTransport.send` returns; cancelling it abandons its transfer.
struct CurlTask: TransportTask {
    let loop: CurlEventLoop
    let transfer: CurlTransfer

    /// Abandons the transfer; its completion is not called afterwards unless it had already begun.
    func cancel() {
        loop.cancel(transfer)
    }
}
