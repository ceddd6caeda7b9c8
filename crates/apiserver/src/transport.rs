//! Serving the router over TCP.
//!
//! The same axum `Router` serves both ways: over a TCP listener (for kubectl and for clients
//! built from a kubeconfig), and directly as a tower `Service`, which `kube::Client::new`
//! accepts without any socket. The TCP side takes an already-bound listener and a shutdown
//! future, so callers choose the address (port 0 included) and when to stop.

use axum::Router;
use std::future::Future;
use tokio::net::TcpListener;

/// Serves `router` on `listener` until `shutdown` completes, then waits for open connections
/// to finish. Open watches must be ended by the caller (the server does that for its own).
pub async fn serve(
    router: Router,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
