//! Where the embedded API server may listen.
//!
//! The embedded server has no authentication or authorization: whoever reaches it can read and
//! change every object. On loopback that is only the local user; on any other address it is
//! the network. `apiserver` and `dev` therefore refuse a non-loopback `--listen` unless
//! `--allow-remote` says the operator means it, and then warn.

use std::net::SocketAddr;

/// Refused: a non-loopback address without `--allow-remote`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing to listen on {addr}: the embedded API server has no authentication, so anyone who can reach it could read and change every object; listen on a loopback address (127.0.0.1, ::1) or pass --allow-remote")]
pub struct RemoteRefused {
    /// The address asked for.
    pub addr: SocketAddr,
}

/// Checks `addr`; returns the warning to print when a remote address is allowed.
pub fn check(addr: SocketAddr, allow_remote: bool) -> Result<Option<String>, RemoteRefused> {
    if addr.ip().is_loopback() {
        return Ok(None);
    }
    if !allow_remote {
        return Err(RemoteRefused { addr });
    }
    Ok(Some(format!(
        "warning: the embedded API server listens on {addr} without authentication or authorization: anyone who can reach it can read and change every object"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_need_no_permission() {
        for addr in ["127.0.0.1:0", "127.1.2.3:8080", "[::1]:0"] {
            assert_eq!(check(addr.parse().unwrap(), false), Ok(None), "{addr}");
        }
    }

    #[test]
    fn other_addresses_are_refused_without_allow_remote() {
        for addr in ["0.0.0.0:0", "[::]:6443", "10.1.2.3:6443"] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert_eq!(check(addr, false), Err(RemoteRefused { addr }));
        }
    }

    #[test]
    fn allowed_remote_addresses_come_with_a_warning_about_authentication() {
        let warning = check("0.0.0.0:6443".parse().unwrap(), true)
            .unwrap()
            .unwrap();
        assert!(warning.contains("0.0.0.0:6443"), "{warning}");
        assert!(warning.contains("without authentication"), "{warning}");
    }
}
